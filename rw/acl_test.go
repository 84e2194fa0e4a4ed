package rw_test

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rw"
)

// A release publishes after its writes. With PUBLISH denied by the ACL, the
// release used to free the lock and then fail on the refused PUBLISH: the
// caller was told nothing changed while the lock was gone. Now each release
// succeeds, leaves the lock as it says, and a waiter on another Client still
// wakes, on the key's invalidation.
func TestReleaseWithPublishDenied(t *testing.T) {
	srv := redistest.Start(t)
	c, other := locktest.OpenDenied(t, srv, "publish"), open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	exists := func(name string) bool {
		n, err := srv.Do("EXISTS", name).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	for _, tt := range []struct {
		name          string
		held, waiting func(*rw.Lock) lease.Locker
	}{
		{"write release wakes a reader", (*rw.Lock).Write, (*rw.Lock).Read},
		{"read release wakes a writer", (*rw.Lock).Read, (*rw.Lock).Write},
	} {
		t.Run(tt.name, func(t *testing.T) {
			name := tt.name
			ls := mustAcquire(t, tt.held(rw.New(c, name)), ctx)
			f := tt.waiting(rw.New(other, name)).AcquireAsync(ctx)
			eventually(t, 5*time.Second, "the waiter waits", func() bool { return other.Stats().Waiters == 1 })
			refused := locktest.Refused(t, srv, "publish")
			if err := ls.Release(ctx); err != nil {
				t.Fatalf("Release: %v", err)
			}
			if locktest.Refused(t, srv, "publish") == refused {
				t.Fatal("the release published nothing that the ACL refused")
			}
			release(t, result(t, f, woken))
		})
	}
	t.Run("reentrant write release", func(t *testing.T) {
		l := rw.New(c, "reentrant").Write()
		outer := mustAcquire(t, l, ctx)
		inner := mustAcquire(t, l, outer.Context())
		release(t, inner)
		if !exists("reentrant") {
			t.Fatal("the inner release freed the lock")
		}
		release(t, outer)
		if exists("reentrant") {
			t.Fatal("the lock is still there after its last release")
		}
	})
	t.Run("force release", func(t *testing.T) {
		mustAcquire(t, rw.New(other, "forced").Write(), ctx) // lost to the force release
		ok, err := rw.New(c, "forced").ForceRelease(ctx)
		if err != nil || !ok {
			t.Fatalf("ForceRelease = %v, %v; want true, nil", ok, err)
		}
		if exists("forced") {
			t.Fatal("the lock is still there after ForceRelease")
		}
	})
}
