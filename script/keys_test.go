package script_test

import (
	"encoding/hex"
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

func TestSemaphoreKeyNames(t *testing.T) {
	tests := []struct{ give, got, want string }{
		{"timeout", script.SemaphoreTimeoutKey("crawl"), "{crawl}:timeout"},
		{"timeout braced", script.SemaphoreTimeoutKey("{crawl}:a"), "{crawl}:a:timeout"},
		{"channel", script.SemaphoreChannel("crawl"), "redisson_sc:{crawl}"},
		{"claims", script.SemaphoreClaimsKey("crawl"), "leasehold_semaphore_claims:{crawl}"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.give, tt.got, tt.want)
		}
	}
}

// A leasehold permit id is 16 bytes: the first 8 of the Client's UUID, the
// lease number in 6, the permit's index in its lease in 2. Owners of
// another shape get a hash, still 14 bytes of prefix.
func TestPermitIDs(t *testing.T) {
	tests := []struct{ owner, want string }{
		{"4eb5c37f-6f31-40ae-bc4b-0216be21f3df:2", "4eb5c37f6f3140ae0000000000020003"},
		{"4EB5C37F-6F31-40AE-BC4B-0216BE21F3DF:2", "4eb5c37f6f3140ae0000000000020003"},
		{"4eb5c37f-6f31-40ae-bc4b-0216be21f3df:281474976710657", "4eb5c37f6f3140ae0000000000010003"}, // 2^48+1: the low 48 bits
	}
	for _, tt := range tests {
		if got := hex.EncodeToString([]byte(script.PermitID(tt.owner, 3))); got != tt.want {
			t.Errorf("PermitID(%q, 3) = %s, want %s", tt.owner, got, tt.want)
		}
	}
	for _, owner := range []string{"plain", "x:1", "4eb5c37f:1", "4eb5c37f-zz31-40ae:1", ":"} {
		if p := script.PermitPrefix(owner); len(p) != 14 {
			t.Errorf("PermitPrefix(%q) is %d bytes, want 14", owner, len(p))
		}
	}
	if script.PermitID("a:1", 0) == script.PermitID("a:1", 1) || script.PermitPrefix("c:1") == script.PermitPrefix("c:2") {
		t.Error("ids collide")
	}
}
