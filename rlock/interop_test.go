package rlock_test

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

func TestRedissonInterop(t *testing.T) {
	srv := redistest.Start(t)
	java := srv.Client()
	c := open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	l := rlock.New(c, "shared")

	// Java holds: leasehold is excluded, and wakes on Java's unlock.
	if !javaLock(t, java, "shared") {
		t.Fatal("Redisson could not take a free lock")
	}
	_, err := l.TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	f := l.AcquireAsync(ctx)
	eventually(t, 5*time.Second, "waiter subscribed", func() bool { return c.Stats().Subscriptions == 1 })
	unlocked := time.Now()
	javaUnlock(t, java, "shared")
	ls, err := f.Result()
	if err != nil {
		t.Fatalf("leasehold waiter after Redisson unlock: %v", err)
	}
	// Redisson's lease was 30s: only the unlock message can explain this.
	if el := time.Since(unlocked); el > 2*time.Second {
		t.Fatalf("woke %v after Redisson's unlock", el)
	}

	// leasehold holds: Redisson is excluded, and its unlock cannot free it.
	if javaLock(t, java, "shared") {
		t.Fatal("Redisson took a lock leasehold holds")
	}
	javaUnlock(t, java, "shared")
	if n, _ := srv.Do("EXISTS", "shared").AsInt64(); n != 1 {
		t.Fatal("Redisson's unlock freed leasehold's lock")
	}
	release(t, ls)
	if !javaLock(t, java, "shared") {
		t.Fatal("Redisson could not take the lock after leasehold released it")
	}
}
