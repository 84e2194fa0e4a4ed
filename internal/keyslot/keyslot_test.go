package keyslot

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Of is CRC16/XMODEM mod 16384 of the hash tag, or of the whole key when it
// has none (an empty "{}" is none), as CLUSTER KEYSLOT answers.
func TestOf(t *testing.T) {
	if got := Of("123456789"); got != 0x31C3 { // CRC16/XMODEM's check value
		t.Fatalf("Of(123456789) = %#x, want 0x31c3", got)
	}
	for _, tt := range []struct{ key, hashed string }{
		{"balance", "balance"},
		{"{acct:1}:balance", "acct:1"},
		{"a{b}c", "b"},
		{"x{}y", "x{}y"},
		{"a}b", "a}b"},
		{"a{b", "a{b"},
		{"}{x}", "x"},
		{"{{a}b}", "{a"},
	} {
		if got := Hashed(tt.key); got != tt.hashed {
			t.Errorf("Hashed(%q) = %q, want %q", tt.key, got, tt.hashed)
		}
		if Of(tt.key) != Of(tt.hashed) {
			t.Errorf("Of(%q) = %d, Of(%q) = %d", tt.key, Of(tt.key), tt.hashed, Of(tt.hashed))
		}
	}
}
