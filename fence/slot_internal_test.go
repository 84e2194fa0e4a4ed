package fence

import "testing"

// The record of a key hashes to the key's Redis Cluster slot whatever its
// braces; the ordinary keys get the names script.KeysOf would give.
func TestRecordKeySlot(t *testing.T) {
	if got := slot("123456789"); got != 0x31C3 { // CRC16/XMODEM's check value
		t.Fatalf("slot(123456789) = %#x, want 0x31c3", got)
	}
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
		if slot(got) != slot(tt.key) {
			t.Errorf("recordKey(%q) = %q: slot %d, the key's %d", tt.key, got, slot(got), slot(tt.key))
		}
	}
}
