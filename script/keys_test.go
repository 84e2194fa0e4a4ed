package script_test

import (
	"testing"

	"github.com/leasehold/leasehold/script"
)

func TestKeyNames(t *testing.T) {
	tests := []struct{ give, got, want string }{
		{"plain", script.LockChannel("orders"), "redisson_lock__channel:{orders}"},
		{"plain", script.TokenKey("orders"), "redisson_lock_token:{orders}"},
		{"plain", script.UnlockLatchKey("orders", "r1"), "redisson_unlock_latch:{orders}:r1"},
		{"braced", script.LockChannel("a{b}c"), "redisson_lock__channel:a{b}c"},
		{"braced", script.TokenKey("{orders}"), "redisson_lock_token:{orders}"},
		{"suffix", script.Suffixed("orders", "x"), "{orders}:x"},
		{"suffix braced", script.Suffixed("{o}rders", "x"), "{o}rders:x"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.give, tt.got, tt.want)
		}
	}
}

func TestScriptsLoaded(t *testing.T) {
	for _, s := range []*script.Script{script.LockAcquire, script.LockRelease, script.LockRenew, script.LockForceRelease} {
		if s.Source() == "" || len(s.SHA()) != 40 {
			t.Errorf("script %s: empty source or bad SHA %q", s.Name(), s.SHA())
		}
	}
}
