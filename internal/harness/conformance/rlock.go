package conformance

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

// Clients on one Server exclude each other, as processes on one Redis do:
// one holder at a time, each with a token above the last.
func testMutualExclusion(t *testing.T, suite Suite) {
	srv := suite.NewServer(t)
	const clients, workers, rounds = 3, 4, 10
	var inside, entries atomic.Int32
	var mu sync.Mutex
	var last uint64
	var wg sync.WaitGroup
	errs := make(chan error, clients*workers*rounds)
	for range clients {
		l := rlock.New(srv.Open(), "mutex")
		for range workers {
			wg.Go(func() {
				for range rounds {
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
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got, want := entries.Load(), int32(clients*workers*rounds); got != want {
		t.Fatalf("%d critical sections, want %d", got, want)
	}
}

// A waiter wakes on the release's unlock message. The holder's lease is a
// minute, which is how long a waiter that missed the message would sleep
// before trying again.
func testWakeOnRelease(t *testing.T, suite Suite) {
	srv := suite.NewServer(t)
	holder, other := srv.Open(), srv.Open()
	ctx := ctxTimeout(t, 30*time.Second)
	held := acquire(t, ctx, rlock.New(holder, "wake", leasehold.WithLeaseTime(time.Minute)))
	f := rlock.New(other, "wake").AcquireAsync(ctx)
	eventually(t, 5*time.Second, "waiter subscribed", func() bool { return other.Stats().Waiters == 1 })
	pending(t, f, "waiter while the lock is held")
	released := time.Now()
	release(t, held)
	ls := result(t, f, 10*time.Second)
	// Generous: the message comes within a round trip; a slow machine
	// under -race still answers in well under 2s, and a missed message
	// means a minute.
	if el := time.Since(released); el > 2*time.Second {
		t.Fatalf("waiter took %v after the release (lease 1m)", el)
	}
	if ls.Token() <= held.Token() {
		t.Fatalf("token %d after %d", ls.Token(), held.Token())
	}
	release(t, ls)
}

// A fixed lease runs out on the wall clock: its holder hears it, and a
// waiter takes the lock then, with a higher token, and not before.
func testFixedLeaseExpires(t *testing.T, suite Suite) {
	srv := suite.NewServer(t)
	holder, other := srv.Open(), srv.Open()
	ctx := ctxTimeout(t, 30*time.Second)
	const leaseTime = 500 * time.Millisecond
	taken := time.Now()
	held := acquire(t, ctx, rlock.New(holder, "fixed", leasehold.WithLeaseTime(leaseTime)))
	ls := acquire(t, ctx, rlock.New(other, "fixed"))
	if el := time.Since(taken); el < leaseTime {
		t.Fatalf("waiter took the lock %v after it was taken, before the %v lease ran out", el, leaseTime)
	}
	select {
	case <-held.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("holder's Lost not closed 5s after its lease ran out")
	}
	wantErr(t, held.Err(), lease.ErrLost)
	if ls.Token() <= held.Token() {
		t.Fatalf("token %d after %d", ls.Token(), held.Token())
	}
	release(t, ls)
}

// The watchdog keeps a lease past its length while the holder lives.
func testWatchdogKeepsLease(t *testing.T, suite Suite) {
	c := suite.NewServer(t).Open(leasehold.WithWatchdog(300 * time.Millisecond))
	ctx := ctxTimeout(t, 30*time.Second)
	l := rlock.New(c, "kept")
	ls := acquire(t, ctx, l)
	time.Sleep(time.Second) // three leases' worth
	if err := ls.Err(); err != nil {
		t.Fatalf("lease lost while renewed: %v", err)
	}
	if _, err := l.TryAcquire(context.Background()); err == nil {
		t.Fatal("TryAcquire of another owner succeeded while the lease is renewed")
	}
	release(t, ls)
}

// A force release, or any removal of the lock, is heard by its holder
// within a second: at once where the server tracks keys for the Client, and
// at the next renewal (the kit's watchdog renews every 0.5s) where not.
func testForceReleaseHeard(t *testing.T, suite Suite) {
	srv := suite.NewServer(t)
	holder, operator := srv.Open(), srv.Open()
	ctx := ctxTimeout(t, 30*time.Second)
	ls := acquire(t, ctx, rlock.New(holder, "forced"))
	removed := time.Now()
	if ok, err := rlock.New(operator, "forced").ForceRelease(ctx); !ok || err != nil {
		t.Fatalf("ForceRelease = %v, %v", ok, err)
	}
	select {
	case <-ls.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("holder did not hear the force release within 5s")
	}
	// At once, or the kit's renewal every 0.5s: a second is that and the slow round trips
	// of a loaded machine under -race.
	el := time.Since(removed)
	t.Logf("the holder heard of the force release %v after it", el)
	if el > time.Second {
		t.Fatalf("holder heard of the force release %v after it, want within 1s", el)
	}
	wantErr(t, ls.Err(), lease.ErrLost)
	wantErr(t, ls.Release(context.Background()), lease.ErrNotHeld)
}

// Reentrancy goes through the lease's context; the lock is free once each
// lease is released; another owner meanwhile is refused.
func testReentrancy(t *testing.T, suite Suite) {
	c := suite.NewServer(t).Open()
	ctx := ctxTimeout(t, 30*time.Second)
	l := rlock.New(c, "re")
	outer := acquire(t, ctx, l)
	inner := acquire(t, outer.Context(), l)
	if n := inner.HoldCount(); n != 2 {
		t.Fatalf("HoldCount %d after a re-entry, want 2", n)
	}
	release(t, inner)
	_, err := l.TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	release(t, outer)
	if locked, err := l.IsLocked(ctx); locked || err != nil {
		t.Fatalf("IsLocked after the last release = %v, %v", locked, err)
	}
	release(t, acquire(t, ctx, l))
}

// Closing a Client releases its locks at once and reports its leases lost
// with ErrClosed; another Client takes the lock without waiting out the
// lease.
func testCloseReleases(t *testing.T, suite Suite) {
	srv := suite.NewServer(t)
	c, other := srv.Open(), srv.Open()
	ctx := ctxTimeout(t, 30*time.Second)
	ls := acquire(t, ctx, rlock.New(c, "closed", leasehold.WithLeaseTime(time.Minute)))
	c.Close()
	wantErr(t, ls.Err(), lease.ErrClosed)
	got, err := rlock.New(other, "closed").TryAcquire(ctx)
	if err != nil {
		t.Fatalf("TryAcquire after the holder's Client closed: %v", err)
	}
	release(t, got)
}

// A wait that ends with its ctx returns ctx's error and holds nothing: the
// lock is free for the next taker as soon as the holder releases it.
func testCancelledWaitHoldsNothing(t *testing.T, suite Suite) {
	srv := suite.NewServer(t)
	holder, other := srv.Open(), srv.Open()
	held := acquire(t, ctxTimeout(t, 10*time.Second), rlock.New(holder, "busy"))
	_, err := rlock.New(other, "busy").Acquire(ctxTimeout(t, 200*time.Millisecond))
	wantErr(t, err, context.DeadlineExceeded)
	f := rlock.New(other, "busy").AcquireAsync(ctxTimeout(t, 10*time.Second))
	f.Cancel()
	if _, err := f.Result(); err == nil {
		t.Fatal("a cancelled Future returned a lease")
	}
	release(t, held)
	ls, err := rlock.New(other, "busy").TryAcquire(ctxTimeout(t, 10*time.Second))
	if err != nil {
		t.Fatalf("TryAcquire after the holder released, the waits given up: %v", err)
	}
	release(t, ls)
	if n := other.Stats().Leases; n != 0 {
		t.Fatalf("%d holds kept after every release", n)
	}
}

// A server without replicas: with WithReplicas every acquisition
// fails with ErrNotReplicated and holds nothing, which is how a test meets
// that path.
func testWithReplicasNotReplicated(t *testing.T, suite Suite) {
	srv := suite.NewServer(t)
	c := srv.Open(leasehold.WithReplicas(1, 50*time.Millisecond))
	ctx := ctxTimeout(t, 10*time.Second)
	_, err := rlock.New(c, "replicated").TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotReplicated)
	if locked, err := rlock.New(srv.Open(), "replicated").IsLocked(ctx); locked || err != nil {
		t.Fatalf("IsLocked after a refused acquisition = %v, %v", locked, err)
	}
}
