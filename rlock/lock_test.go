package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

// Many goroutines over several Clients: never two holders at once, and every
// holder's fencing token is above the one before.
func TestMutualExclusion(t *testing.T) {
	srv := redistest.Start(t)
	const clients, workers, rounds = 3, 8, 25
	var inside atomic.Int32
	var mu sync.Mutex
	var last uint64
	var entries atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients*workers)
	for i := 0; i < clients; i++ {
		c := open(t, srv)
		for j := 0; j < workers; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l := rlock.New(c, "mutex")
				for r := 0; r < rounds; r++ {
					ls, err := l.Acquire(ctxTimeout(t, 30*time.Second))
					if err != nil {
						errs <- err
						return
					}
					if n := inside.Add(1); n != 1 {
						errs <- fmt.Errorf("%d holders at once", n)
					}
					mu.Lock()
					if ls.Token() <= last {
						errs <- fmt.Errorf("token %d after %d", ls.Token(), last)
					}
					last = ls.Token()
					mu.Unlock()
					entries.Add(1)
					inside.Add(-1)
					if err := ls.Release(context.Background()); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got, want := entries.Load(), int64(clients*workers*rounds); got != want {
		t.Fatalf("%d critical sections, want %d", got, want)
	}
}

func TestReentrancy(t *testing.T) {
	srv := redistest.Start(t)
	c, other := open(t, srv), open(t, srv)
	l := rlock.New(c, "reentrant")
	ctx := ctxTimeout(t, 10*time.Second)

	outer := mustAcquire(t, l, ctx)
	inner, err := rlock.New(c, "reentrant").Acquire(outer.Context())
	if err != nil {
		t.Fatalf("reentrant Acquire: %v", err)
	}
	if inner.HoldCount() != 2 || outer.HoldCount() != 2 {
		t.Fatalf("HoldCount = %d, %d; want 2", inner.HoldCount(), outer.HoldCount())
	}
	if inner.Token() != outer.Token() {
		t.Fatalf("reentrant token %d, want the outer lease's %d: one hold, one holder", inner.Token(), outer.Token())
	}
	if n, err := l.HoldCount(inner.Context()); err != nil || n != 2 {
		t.Fatalf("HoldCount = %d, %v; want 2", n, err)
	}
	if all, _ := srv.Do("HGETALL", "reentrant").AsStrMap(); len(all) != 1 || all[outerOwner(t, srv)] != "2" {
		t.Fatalf("lock hash = %v, want one owner with count 2", all)
	}
	if n, _ := l.HoldCount(ctx); n != 0 {
		t.Fatalf("HoldCount without a lease in ctx = %d", n)
	}
	// Another Client's TryAcquire fails while either lease holds.
	_, err = rlock.New(other, "reentrant").TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)

	release(t, inner)
	if err := inner.Context().Err(); err == nil {
		t.Fatal("released lease's context not cancelled")
	}
	if outer.Context().Err() != nil || isLost(outer) {
		t.Fatal("releasing the inner lease ended the outer one")
	}
	if n, _ := l.HoldCount(outer.Context()); n != 1 {
		t.Fatalf("HoldCount after inner release = %d, want 1", n)
	}
	if all, _ := srv.Do("HGETALL", "reentrant").AsStrMap(); len(all) != 1 || all[outerOwner(t, srv)] != "1" {
		t.Fatalf("lock hash after inner release = %v, want one owner with count 1", all)
	}
	_, err = rlock.New(other, "reentrant").TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)

	release(t, outer)
	ls, err := rlock.New(other, "reentrant").TryAcquire(ctx)
	if err != nil {
		t.Fatalf("TryAcquire after full release: %v", err)
	}
	release(t, ls)
	wantErr(t, outer.Release(ctx), lease.ErrNotHeld)
}

// Released out of order: the outer lease first, the inner one keeps the lock.
func TestReentrantReleaseOutOfOrder(t *testing.T) {
	srv := redistest.Start(t)
	c, other := open(t, srv), open(t, srv)
	l := rlock.New(c, "ooo")
	ctx := ctxTimeout(t, 10*time.Second)
	outer := mustAcquire(t, l, ctx)
	inner := mustAcquire(t, l, outer.Context())
	release(t, outer)
	if inner.Context().Err() != nil {
		t.Fatal("releasing the outer lease cancelled the inner lease's context")
	}
	_, err := rlock.New(other, "ooo").TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	release(t, inner)
	if ok, err := l.IsLocked(ctx); err != nil || ok {
		t.Fatalf("IsLocked after both releases = %v, %v; want false", ok, err)
	}
}

func TestFixedLeaseExpires(t *testing.T) {
	srv := redistest.Start(t)
	c, other := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	start := time.Now()
	ls := mustAcquire(t, rlock.New(c, "fixed", leasehold.WithLeaseTime(300*time.Millisecond)), ctx)
	select {
	case <-ls.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("fixed lease never reported lost")
	}
	// The holder hears at its lease's end as it reckons it: counted from
	// when the acquisition was sent, less the drift margin, so within
	// 300ms of start and never before that deadline. 1s covers a timer
	// late on a machine busy with other tests; without the timer the loss
	// would be heard at the next read of the key, if ever.
	lost, deadline := time.Now(), ls.Deadline()
	if deadline.Sub(start) > 300*time.Millisecond {
		t.Errorf("a 300ms lease's deadline %v after its acquisition began", deadline.Sub(start))
	}
	if late := lost.Sub(deadline); late < 0 || late > time.Second {
		t.Errorf("Lost %v after the lease's deadline", late)
	}
	wantErr(t, ls.Err(), lease.ErrLost)
	if ls.Context().Err() == nil {
		t.Fatal("lost lease's context not cancelled")
	}
	if !errors.Is(context.Cause(ls.Context()), lease.ErrLost) {
		t.Fatalf("context cause %v", context.Cause(ls.Context()))
	}
	// The lock is free for others once Redis expires it.
	got := mustAcquire(t, rlock.New(other, "fixed"), ctx)
	release(t, got)
	wantErr(t, ls.Release(ctx), lease.ErrNotHeld)
}

// outerOwner returns the one owner field of the lock hash "reentrant".
func outerOwner(t *testing.T, srv *redistest.Server) string {
	t.Helper()
	keys, err := srv.Do("HKEYS", "reentrant").AsStrSlice()
	if err != nil || len(keys) != 1 {
		t.Fatalf("HKEYS reentrant = %v, %v", keys, err)
	}
	return keys[0]
}

func TestWatchdogKeepsLease(t *testing.T) {
	srv := redistest.Start(t)
	// 1s, renewed every 333ms: a race build on a busy machine stalled a
	// 300ms watchdog's renewals past its lease.
	const watchdog = time.Second
	c, other := open(t, srv, leasehold.WithWatchdog(watchdog)), open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	l := rlock.New(c, "watched")
	ls := mustAcquire(t, l, ctx)
	rounds := c.Stats().RenewalRounds
	// Three leases long: the lock would have expired twice over unrenewed.
	time.Sleep(3 * watchdog)
	if isLost(ls) {
		t.Fatalf("watchdog lease lost: %v", ls.Err())
	}
	if c.Stats().RenewalRounds-rounds < 3 {
		t.Fatalf("%d renewal rounds in 3 watchdog periods", c.Stats().RenewalRounds-rounds)
	}
	if ttl, err := l.RemainTTL(ctx); err != nil || ttl <= 0 || ttl > watchdog {
		t.Fatalf("RemainTTL = %v, %v; want in (0, %v]", ttl, err, watchdog)
	}
	_, err := rlock.New(other, "watched").TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	release(t, ls)
}

// Killing Redis: the holder learns within the lease, from its own deadline,
// since no renewal can be confirmed.
func TestServerKillLosesLease(t *testing.T) {
	srv := redistest.Start(t)
	const watchdog = 600 * time.Millisecond
	c := open(t, srv, leasehold.WithWatchdog(watchdog))
	ls := mustAcquire(t, rlock.New(c, "doomed"), ctxTimeout(t, 5*time.Second))
	killed := time.Now()
	srv.Kill()
	select {
	case <-ls.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("lease not lost after the server died")
	}
	// The deadline is last confirmed renewal + lease - drift, so at most the
	// lease after the kill; 150ms covers a late timer on a loaded machine.
	if el := time.Since(killed); el > watchdog+150*time.Millisecond {
		t.Errorf("Lost %v after the kill, lease %v", el, watchdog)
	}
	wantErr(t, ls.Err(), lease.ErrLost)
}

// A waiter is woken by the release message, not by its TTL timer: the
// holder's lease is 30s, the waiter must be holding well before.
func TestWakeOnRelease(t *testing.T) {
	srv := redistest.Start(t)
	c, other := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	held := mustAcquire(t, rlock.New(c, "wake"), ctx)
	f := rlock.New(other, "wake").AcquireAsync(ctx)
	eventually(t, 5*time.Second, "waiter subscribed", func() bool { return other.Stats().Subscriptions == 1 })
	released := time.Now()
	release(t, held)
	ls, err := f.Result()
	if err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if el := time.Since(released); el > 2*time.Second {
		t.Fatalf("waiter took %v after the release (lease 30s)", el)
	}
	release(t, ls)
}

// holdForeign makes name held by a foreign owner, as Redisson writes a lock,
// for ttl.
func holdForeign(srv *redistest.Server, name string, ttl time.Duration) {
	srv.Do("HSET", name, "foreign:1", "1")
	srv.Do("PEXPIRE", name, strconv.FormatInt(ttl.Milliseconds(), 10))
}

// A lock deleted without any message (a foreign client's DEL) still wakes
// the waiter: the invalidation of the key does, on a Client made by Open
// and on one made by New over the caller's rueidis client alike (both read
// a waiter's key on a tracking connection of their own).
func TestWakeOnInvalidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T, srv *redistest.Server) *leasehold.Client
	}{
		{"Open", func(t *testing.T, srv *redistest.Server) *leasehold.Client { return open(t, srv) }},
		{"New", func(t *testing.T, srv *redistest.Server) *leasehold.Client {
			rc, err := rueidis.NewClient(srv.Option())
			if err != nil {
				t.Fatal(err)
			}
			c, err := leasehold.New(rc)
			if err != nil {
				rc.Close()
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close(); rc.Close() })
			return c
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			c := tc.open(t, srv)
			ctx := ctxTimeout(t, 20*time.Second)
			holdForeign(srv, "silent", 30000*time.Millisecond)
			f := rlock.New(c, "silent").AcquireAsync(ctx)
			eventually(t, 5*time.Second, "waiter subscribed", func() bool { return c.Stats().Subscriptions == 1 })
			time.Sleep(50 * time.Millisecond) // let the waiter settle into its wait
			deleted := time.Now()
			srv.Do("DEL", "silent")
			ls, err := f.Result()
			if err != nil {
				t.Fatalf("waiter: %v", err)
			}
			// Generous for a busy machine: a wake-up takes milliseconds, and
			// without the invalidation the waiter would sleep for the 30s lease.
			if el := time.Since(deleted); el > 2*time.Second {
				t.Fatalf("waiter took %v after DEL (lease 30s, no message)", el)
			}
			release(t, ls)
		})
	}
}

// A waiter that joins a channel already subscribed and silent makes no
// second attempt (see hub.Waiter.Missed); after a foreign DEL, which
// publishes nothing, both waiters still get the lock in turn.
func TestWakeOnInvalidationLateWaiter(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	holdForeign(srv, "silent", 30000*time.Millisecond)
	l := rlock.New(c, "silent")
	first := l.AcquireAsync(ctx)
	eventually(t, 5*time.Second, "first waiter subscribed", func() bool { return c.Stats().Subscriptions == 1 })
	second := l.AcquireAsync(ctx)
	eventually(t, 5*time.Second, "second waiter waiting", func() bool { return c.Stats().Waiters == 2 })
	time.Sleep(50 * time.Millisecond) // let both settle into their waits
	deleted := time.Now()
	srv.Do("DEL", "silent")
	pending := []*lease.Future{first, second}
	for len(pending) > 0 {
		// Either may win; the other is woken by the winner's release.
		var f *lease.Future
		select {
		case <-pending[0].Done():
			f, pending = pending[0], pending[1:]
		case <-pending[len(pending)-1].Done():
			f, pending = pending[len(pending)-1], pending[:len(pending)-1]
		case <-time.After(4 * time.Second): // generous: a wake-up takes milliseconds
			t.Fatalf("%d waiter(s) still waiting %v after DEL (lease 30s)", len(pending), time.Since(deleted))
		}
		ls, err := f.Result()
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
		release(t, ls)
	}
}

// An expiring lock wakes its waiter soon after the expiry.
func TestWakeOnExpiry(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	holdForeign(srv, "expiring", 400*time.Millisecond)
	start := time.Now()
	ls := mustAcquire(t, rlock.New(c, "expiring"), ctx)
	if el := time.Since(start); el > 400*time.Millisecond+time.Second {
		t.Fatalf("waiter took %v for a lock expiring after 400ms", el)
	}
	release(t, ls)
}

// A cancelled wait returns ctx's error and leaves no subscription behind.
func TestCancelledWait(t *testing.T) {
	srv := redistest.Start(t)
	c, other := open(t, srv), open(t, srv)
	held := mustAcquire(t, rlock.New(c, "busy"), ctxTimeout(t, 5*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := rlock.New(other, "busy").Acquire(ctx)
	wantErr(t, err, context.DeadlineExceeded)
	eventually(t, 5*time.Second, "subscription dropped", func() bool {
		n, err := srv.Do("PUBSUB", "NUMSUB", "redisson_lock__channel:{busy}").AsIntSlice()
		return err != nil || (len(n) == 0)
	})
	if s := other.Stats(); s.Subscriptions != 0 || s.Waiters != 0 {
		t.Fatalf("hub after cancelled wait: %+v", s)
	}
	release(t, held)
}
