package script_test

import (
	"testing"

	"github.com/leasehold/leasehold/script"
)

// The names are Redisson's (and leasehold's own), byte for byte: a Java
// service sharing a lock finds it under the same keys.
func TestKeyNames(t *testing.T) {
	plain, braced, tagged := script.KeysOf("orders"), script.KeysOf("a{b}c"), script.KeysOf("{orders}")
	tests := []struct{ give, got, want string }{
		{"name", plain.Name, "orders"},
		{"channel", plain.Channel, "redisson_lock__channel:{orders}"},
		{"channel braced", braced.Channel, "redisson_lock__channel:a{b}c"},
		{"token", plain.Token, "redisson_lock_token:{orders}"},
		{"token braced", tagged.Token, "redisson_lock_token:{orders}"},
		{"latch", plain.UnlockLatch("r1"), "redisson_unlock_latch:{orders}:r1"},
		{"latch braced", braced.UnlockLatch("r1"), "redisson_unlock_latch:a{b}c:r1"},
		{"fair queue", plain.FairQueue, "redisson_lock_queue:{orders}"},
		{"fair timeout", plain.FairTimeout, "redisson_lock_timeout:{orders}"},
		{"fair channel", plain.FairChannel("c:1"), "redisson_lock__channel:{orders}:c:1"},
		{"rw channel", plain.RWChannel, "redisson_rwlock:{orders}"},
		{"rw prefix", plain.RWPrefix, "{orders}"},
		{"rw prefix braced", braced.RWPrefix, "a{b}c"},
		{"read holds", plain.ReadHolds("c:1"), "{orders}:c:1:rwlock_timeout"},
		{"read holds braced", script.KeysOf("{o}rders").ReadHolds("c:1"), "{o}rders:c:1:rwlock_timeout"},
		{"writers", plain.Writers, "leasehold_rwlock_writers:{orders}"},
		{"semaphore timeout", script.KeysOf("crawl").SemaphoreTimeout, "{crawl}:timeout"},
		{"semaphore timeout braced", script.KeysOf("{crawl}:a").SemaphoreTimeout, "{crawl}:a:timeout"},
		{"semaphore channel", script.KeysOf("crawl").SemaphoreChannel, "redisson_sc:{crawl}"},
		{"semaphore claims", script.KeysOf("crawl").SemaphoreClaims, "leasehold_semaphore_claims:{crawl}"},
		{"leader", script.KeysOf("sched").Leader, "{sched}:leader"},
		{"leader braced", script.KeysOf("{sched}:eu").Leader, "{sched}:eu:leader"},
		{"election channel", script.KeysOf("sched").ElectionChannel, "leasehold_election__channel:{sched}"},
		{"election channel braced", script.KeysOf("{sched}:eu").ElectionChannel, "leasehold_election__channel:{sched}:eu"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.give, tt.got, tt.want)
		}
	}
}

// All hands out copies: a caller that changes one changes nothing the
// library runs.
func TestAllIsACopy(t *testing.T) {
	all := script.All()
	if len(all) == 0 || all[0].Source == "" || len(all[0].SHA) != 40 {
		t.Fatalf("All()[0] = %+v", all)
	}
	want := all[0].Source
	all[0].Source = "return 2"
	if script.All()[0].Source != want {
		t.Error("All returned the library's own slice")
	}
}
