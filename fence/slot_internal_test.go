package fence

import (
	"testing"

	"github.com/leasehold/leasehold/internal/keyslot"
)

// The record of a key hashes to the key's Redis Cluster slot whatever its
// braces; the ordinary keys get the names script.KeysOf would give.
func TestRecordKeySlot(t *testing.T) {
	tests := []struct{ key, want string }{
		{"balance", "leasehold_fence:{balance}"},
		{"{acct:1}:balance", "leasehold_fence:{acct:1}:balance"},
		{"a{b}c", "leasehold_fence:a{b}c"},
		{"x{}y", ""},
		{"a}b", ""},
		{"a{b", ""},
		{"}{x}", ""},
		{"{", ""},
	}
	for _, tt := range tests {
		got := recordKey(tt.key)
		if tt.want != "" && got != tt.want {
			t.Errorf("recordKey(%q) = %q, want %q", tt.key, got, tt.want)
		}
		if keyslot.Of(got) != keyslot.Of(tt.key) {
			t.Errorf("recordKey(%q) = %q: slot %d, the key's %d", tt.key, got, keyslot.Of(got), keyslot.Of(tt.key))
		}
	}
}
