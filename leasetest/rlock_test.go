package leasetest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/leasehold/leasehold/leasetest"
	"github.com/leasehold/leasehold/rlock"
)

// Parallel tests get servers of their own: the same lock name is free in
// each, and a Server's keys are gone with its test.
func TestParallelServers(t *testing.T) {
	addrs := make(chan string, 4)
	t.Run("group", func(t *testing.T) {
		for i := range cap(addrs) {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				srv := leasetest.NewServer(t)
				addrs <- srv.Addr()
				ls, err := rlock.New(srv.Open(), "shared-name").TryAcquire(ctxTimeout(t, 10*time.Second))
				if err != nil {
					t.Fatalf("TryAcquire on a server of this test's own: %v", err)
				}
				time.Sleep(100 * time.Millisecond) // held while the others try theirs
				release(t, ls)
			})
		}
	})
	close(addrs)
	seen := map[string]bool{}
	for a := range addrs {
		if seen[a] {
			t.Fatalf("two parallel tests got the server at %s", a)
		}
		seen[a] = true
	}
}

// A removal that publishes nothing (a DEL by another client) wakes a
// waiter when the holder's lease was due to end: the kit's 1.5s watchdog
// at most, not at once (no invalidations), and not the waiter's own 30s.
func TestWaiterAfterSilentDelete(t *testing.T) {
	srv := leasetest.NewServer(t)
	holder, other := srv.Open(), srv.Open()
	ctx := ctxTimeout(t, 30*time.Second)
	held := acquire(t, ctx, rlock.New(holder, "silent"))
	f := rlock.New(other, "silent").AcquireAsync(ctx)
	eventually(t, 5*time.Second, "waiter subscribed", func() bool { return other.Stats().Waiters == 1 })
	rc := rawClient(t, srv)
	deleted := time.Now()
	if err := rc.Do(ctx, rc.B().Del().Key("silent").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	ls := result(t, f, 10*time.Second)
	// The watchdog's 1.5s, plus 2s for a loaded machine under -race.
	if el := time.Since(deleted); el > 3500*time.Millisecond {
		t.Fatalf("waiter took the lock %v after the DEL, want within the holder's 1.5s lease", el)
	}
	<-held.Lost()
	release(t, ls)
}
