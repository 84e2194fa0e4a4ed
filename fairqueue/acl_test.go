package fairqueue_test

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
)

// A release tells the head of the queue after its writes. With PUBLISH denied
// by the ACL, the release used to free the lock and then fail on the refused
// PUBLISH: the caller was told nothing changed while the lock was gone. Now
// each release succeeds, leaves the lock as it says, and the head still gets
// the lock, at its refresh timer (a fair waiter listens to no key).
func TestReleaseWithPublishDenied(t *testing.T) {
	srv := redistest.Start(t)
	c, other := locktest.OpenDenied(t, srv, "publish"), open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	// A queue timeout of 900ms: the head's timer fires every 300ms.
	waiter := func(name string) *fairqueue.Lock {
		return fairqueue.New(other, name, leasehold.WithQueueTimeout(900*time.Millisecond))
	}

	t.Run("release wakes the head", func(t *testing.T) {
		ls := mustAcquire(t, fairqueue.New(c, "plain"), ctx)
		waiting := goAcquire(waiter("plain"), ctx)
		queued(t, srv, "plain", 1)
		refused := locktest.Refused(t, srv, "publish")
		if err := ls.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if locktest.Refused(t, srv, "publish") == refused {
			t.Fatal("the release told the head nothing that the ACL refused")
		}
		release(t, await(t, waiting, 5*time.Second, "the head after the release"))
	})
	t.Run("reentrant release", func(t *testing.T) {
		l := fairqueue.New(c, "reentrant")
		outer := mustAcquire(t, l, ctx)
		inner := mustAcquire(t, l, outer.Context())
		waiting := goAcquire(waiter("reentrant"), ctx)
		queued(t, srv, "reentrant", 1)
		release(t, inner)
		if n, _ := srv.Do("EXISTS", "reentrant").AsInt64(); n != 1 {
			t.Fatal("the inner release freed the lock")
		}
		release(t, outer)
		release(t, await(t, waiting, 5*time.Second, "the head after the last release"))
	})
	t.Run("force release", func(t *testing.T) {
		mustAcquire(t, fairqueue.New(other, "forced"), ctx) // lost to the force release
		waiting := goAcquire(waiter("forced"), ctx)
		queued(t, srv, "forced", 1)
		refused := locktest.Refused(t, srv, "publish")
		ok, err := fairqueue.New(c, "forced").ForceRelease(ctx)
		if err != nil || !ok {
			t.Fatalf("ForceRelease = %v, %v; want true, nil", ok, err)
		}
		if locktest.Refused(t, srv, "publish") == refused {
			t.Fatal("ForceRelease told the head nothing that the ACL refused")
		}
		release(t, await(t, waiting, 5*time.Second, "the head after ForceRelease"))
	})
}
