package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

func TestAcquireAsync(t *testing.T) {
	srv := redistest.Start(t)
	c, other := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)

	t.Run("free lock", func(t *testing.T) {
		f := rlock.New(c, "async-free").AcquireAsync(ctx)
		<-f.Done()
		ls, err := f.Result()
		if err != nil {
			t.Fatal(err)
		}
		f.Cancel() // Result handed the lease out: Cancel leaves it alone
		if isLost(ls) || ls.Context().Err() != nil {
			t.Fatal("Cancel after Result ended the lease")
		}
		release(t, ls)
	})

	t.Run("cancel while waiting holds nothing", func(t *testing.T) {
		held := mustAcquire(t, rlock.New(c, "async-busy"), ctx)
		f := rlock.New(other, "async-busy").AcquireAsync(ctx)
		eventually(t, 5*time.Second, "waiter subscribed", func() bool { return other.Stats().Waiters == 1 })
		f.Cancel()
		_, err := f.Result()
		wantErr(t, err, context.Canceled)
		release(t, held)
		if n, _ := srv.Do("EXISTS", "async-busy").AsInt64(); n != 0 {
			t.Fatal("lock held after the cancelled future and the release")
		}
	})

	t.Run("cancel after winning releases", func(t *testing.T) {
		f := rlock.New(c, "async-won").AcquireAsync(ctx)
		<-f.Done()
		f.Cancel()
		if n, _ := srv.Do("EXISTS", "async-won").AsInt64(); n != 0 {
			t.Fatal("cancelled future left its lock held")
		}
		_, err := f.Result()
		wantErr(t, err, context.Canceled)
	})

	t.Run("waiter gets the lock on release", func(t *testing.T) {
		held := mustAcquire(t, rlock.New(c, "async-handoff"), ctx)
		f := rlock.New(other, "async-handoff").AcquireAsync(ctx)
		select {
		case <-f.Done():
			t.Fatal("future done while the lock is held")
		case <-time.After(50 * time.Millisecond):
		}
		release(t, held)
		ls, err := f.Result()
		if err != nil {
			t.Fatal(err)
		}
		release(t, ls)
	})
}

// Close reports held leases lost with ErrClosed and frees their locks.
func TestClientCloseReleases(t *testing.T) {
	srv := redistest.Start(t)
	c, other := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	ls := mustAcquire(t, rlock.New(c, "closing"), ctx)
	waiting := rlock.New(c, "closing-busy")
	held := mustAcquire(t, rlock.New(other, "closing-busy"), ctx)
	f := waiting.AcquireAsync(ctx)

	c.Close()
	if !isLost(ls) {
		t.Fatal("lease not lost after Close")
	}
	wantErr(t, ls.Err(), lease.ErrClosed)
	wantErr(t, ls.Release(ctx), lease.ErrNotHeld)
	_, err := f.Result()
	wantErr(t, err, lease.ErrClosed)
	if n, _ := srv.Do("EXISTS", "closing").AsInt64(); n != 0 {
		t.Fatal("Close left its lock held")
	}
	_, err = rlock.New(c, "closing").Acquire(ctx)
	wantErr(t, err, lease.ErrClosed)
	release(t, held)
}

func TestInspection(t *testing.T) {
	srv := redistest.Start(t)
	c, other := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	l := rlock.New(c, "inspected")
	if ok, err := l.IsLocked(ctx); err != nil || ok {
		t.Fatalf("IsLocked on a free lock = %v, %v", ok, err)
	}
	if ttl, err := l.RemainTTL(ctx); err != nil || ttl != 0 {
		t.Fatalf("RemainTTL on a free lock = %v, %v", ttl, err)
	}
	ls := mustAcquire(t, rlock.New(other, "inspected"), ctx)
	eventually(t, 2*time.Second, "IsLocked true", func() bool {
		ok, err := l.IsLocked(ctx)
		return err == nil && ok
	})
	if ttl, err := l.RemainTTL(ctx); err != nil || ttl <= 0 {
		t.Fatalf("RemainTTL on a held lock = %v, %v", ttl, err)
	}
	freed, err := l.ForceRelease(ctx)
	if err != nil || !freed {
		t.Fatalf("ForceRelease = %v, %v", freed, err)
	}
	eventually(t, 2*time.Second, "IsLocked false after ForceRelease", func() bool {
		ok, err := l.IsLocked(ctx)
		return err == nil && !ok
	})
	if freed, _ := l.ForceRelease(ctx); freed {
		t.Fatal("ForceRelease of a free lock reported a lock")
	}
	// The holder learns at its next release at the latest.
	wantErr(t, ls.Release(ctx), lease.ErrNotHeld)
	wantErr(t, ls.Err(), lease.ErrLost)
}
