package semaphore_test

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/script"
	"github.com/leasehold/leasehold/semaphore"
)

// Every change of the permits publishes after its writes. With PUBLISH denied
// by the ACL, TrySetPermits(5) used to set 5 and fail, AddPermits(3) to add
// 3 and fail (a caller retrying on the error added 3 again), and a release to
// give its permits back and fail. Now each succeeds, and the permits are
// exactly what was asked, once.
func TestPermitsWithPublishDenied(t *testing.T) {
	srv := redistest.Start(t)
	c, other := locktest.OpenDenied(t, srv, "publish"), open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	// refusedBy fails the test unless f meets a PUBLISH the ACL refuses: the
	// path under test ran.
	refusedBy := func(t *testing.T, f func()) {
		t.Helper()
		before := locktest.Refused(t, srv, "publish")
		f()
		if locktest.Refused(t, srv, "publish") == before {
			t.Fatal("published nothing that the ACL refused")
		}
	}

	s := semaphore.New(c, "sem")
	t.Run("set", func(t *testing.T) {
		refusedBy(t, func() {
			if ok, err := s.TrySetPermits(ctx, 5); err != nil || !ok {
				t.Fatalf("TrySetPermits(5) = %v, %v; want true, nil", ok, err)
			}
		})
		if n := count(t, srv, "sem"); n != 5 {
			t.Fatalf("%d permits after TrySetPermits(5)", n)
		}
	})
	t.Run("add", func(t *testing.T) {
		refusedBy(t, func() {
			if err := s.AddPermits(ctx, 3); err != nil {
				t.Fatalf("AddPermits(3): %v", err)
			}
		})
		if n := count(t, srv, "sem"); n != 8 {
			t.Fatalf("%d permits after AddPermits(3) on 5, want 8", n)
		}
	})
	t.Run("release wakes a waiter", func(t *testing.T) {
		all := mustAcquire(t, s.Weighted(8), ctx)
		reads := locktest.Calls(t, srv, "exists")
		f := semaphore.New(other, "sem").AcquireAsync(ctx)
		eventually(t, 5*time.Second, "the waiter waits", func() bool { return waiters(other) == 1 })
		// The waiter hears a change of the count once its Client has read
		// the key on its tracking connection (an EXISTS, armDelay after
		// its attempt failed). A release before that read, with no
		// PUBLISH, is missed until a permit's lease runs out
		// (docs/safety.md): wait for the read, as a release a moment
		// later would.
		eventually(t, 5*time.Second, "the waiter's Client tracks the count", func() bool { return locktest.Calls(t, srv, "exists") > reads })
		refusedBy(t, func() {
			if err := all.Release(ctx); err != nil {
				t.Fatalf("Release: %v", err)
			}
		})
		// Woken by the invalidation of the count, not the 30s lease.
		ls := result(t, f, 5*time.Second)
		if n := count(t, srv, "sem"); n != 7 {
			t.Fatalf("%d permits available with 1 of 8 held, want 7", n)
		}
		release(t, ls)
	})
	t.Run("expired permit given back", func(t *testing.T) {
		// A Java permit that expired: the next attempt gives it back and
		// publishes the permits then available.
		if ok, err := semaphore.New(c, "reclaim").TrySetPermits(ctx, 0); err != nil || !ok {
			t.Fatalf("TrySetPermits(0) = %v, %v", ok, err)
		}
		srv.Do("ZADD", script.KeysOf("reclaim").SemaphoreTimeout, "1", "expired-java-permit")
		refusedBy(t, func() {
			got, err := semaphore.New(c, "reclaim").TryAcquire(ctx)
			if err != nil {
				t.Fatalf("TryAcquire: %v", err)
			}
			defer release(t, got)
			if n := count(t, srv, "reclaim"); n != 0 {
				t.Fatalf("%d permits available with the one given back taken, want 0", n)
			}
		})
	})
}
