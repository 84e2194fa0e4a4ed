package rlock_test

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/rlock"
)

// A release publishes after its writes. With PUBLISH denied by the ACL, the
// release used to delete the lock and then fail on the refused PUBLISH: the
// caller was told nothing changed while the lock was gone. Now each release
// succeeds, leaves the lock as it says, and a waiter on another Client still
// wakes, on the key's invalidation, long before the 30s watchdog lease.
func TestReleaseWithPublishDenied(t *testing.T) {
	srv := redistest.Start(t)
	c, other := locktest.OpenDenied(t, srv, "publish"), open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)

	t.Run("release wakes a waiter", func(t *testing.T) {
		ls := mustAcquire(t, rlock.New(c, "plain"), ctx)
		f := rlock.New(other, "plain").AcquireAsync(ctx)
		eventually(t, 5*time.Second, "the waiter waits", func() bool { return other.Stats().Waiters == 1 })
		refused := locktest.Refused(t, srv, "publish")
		if err := ls.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if locktest.Refused(t, srv, "publish") == refused {
			t.Fatal("the release published nothing that the ACL refused")
		}
		release(t, locktest.Result(t, f, 5*time.Second))
	})
	t.Run("reentrant release", func(t *testing.T) {
		l := rlock.New(c, "reentrant")
		outer := mustAcquire(t, l, ctx)
		inner := mustAcquire(t, l, outer.Context())
		if n := hold(t, srv, "reentrant"); n != "2" {
			t.Fatalf("hold count %s, want 2", n)
		}
		release(t, inner)
		if n := hold(t, srv, "reentrant"); n != "1" {
			t.Fatalf("hold count %s after the inner release, want 1", n)
		}
		refused := locktest.Refused(t, srv, "publish")
		release(t, outer)
		if locktest.Refused(t, srv, "publish") == refused {
			t.Fatal("the last release published nothing that the ACL refused")
		}
		if n, _ := srv.Do("EXISTS", "reentrant").AsInt64(); n != 0 {
			t.Fatal("the lock is still there after its last release")
		}
	})
	t.Run("force release", func(t *testing.T) {
		mustAcquire(t, rlock.New(other, "forced"), ctx) // lost to the force release
		ok, err := rlock.New(c, "forced").ForceRelease(ctx)
		if err != nil || !ok {
			t.Fatalf("ForceRelease = %v, %v; want true, nil", ok, err)
		}
		if n, _ := srv.Do("EXISTS", "forced").AsInt64(); n != 0 {
			t.Fatal("the lock is still there after ForceRelease")
		}
	})
}

// hold is the single owner's hold count in the lock hash name.
func hold(t *testing.T, srv *redistest.Server, name string) string {
	t.Helper()
	m, err := srv.Do("HGETALL", name).AsStrMap()
	if err != nil || len(m) != 1 {
		t.Fatalf("HGETALL %s = %v, %v; want one owner", name, m, err)
	}
	for _, n := range m {
		return n
	}
	return ""
}
