package leasehold_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

// closeBound is Close's documented bound, 5s, and half a second for a
// loaded machine: Close waits on timers, not on work, so lateness is the
// scheduler's.
const closeBound = 5*time.Second + 500*time.Millisecond

// Close keeps its bound when Redis answers nothing (SIGSTOP): it gives up
// the releases, the unsubscriptions and the connections in time. Before, it
// took 6.0s with 200 leases: 5s of releases, then a second of rueidis
// waiting for its PING's reply on the connection it closed. With rueidis'
// default timeouts, on every kind of Client, with leases, waiters and
// subscriptions. The kinds run in parallel: each waits on timers.
func TestCloseBoundedWhenRedisIsPaused(t *testing.T) {
	for _, ck := range clientKinds {
		t.Run(ck.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			c := ck.open(t, rueidis.ClientOption{InitAddress: []string{srv.Addr()}})
			ctx := context.Background()
			var held []*lease.Lease
			for i := range 200 {
				held = append(held, mustHold(t)(rlock.New(c, fmt.Sprint("paused:", i)).Acquire(ctx)))
			}
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			var waiting []*lease.Future
			for i := range 20 {
				waiting = append(waiting, rlock.New(c, fmt.Sprint("paused:", i)).AcquireAsync(wctx))
			}
			waitFor(t, func() bool { return c.Stats().Waiters == 20 }, "20 waiters")
			srv.Pause()
			defer srv.Resume()
			start := time.Now()
			c.Close()
			took := time.Since(start)
			t.Logf("Close took %v", took)
			if took > closeBound {
				t.Fatalf("Close took %v with Redis paused, want at most %v", took, closeBound)
			}
			for _, l := range held {
				if !errors.Is(l.Err(), lease.ErrClosed) {
					t.Fatalf("a lease after Close: %v, want ErrClosed", l.Err())
				}
			}
			for _, f := range waiting {
				if _, err := f.Result(); !errors.Is(err, lease.ErrClosed) {
					t.Fatalf("a waiter after Close: %v, want ErrClosed", err)
				}
			}
		})
	}
}

// An AcquireAsync runs in a goroutine Close waits for: one whose script got
// no answer (Redis paused) kept Close waiting until rueidis gave up the
// connection, 11s with its default timeouts on a Client made by New (whose
// rueidis client Close leaves open; 18s once under load). Its attempt now
// ends when Close's time is up, and it fails with lease.ErrClosed.
func TestCloseEndsAcquisitionsInFlight(t *testing.T) {
	srv := redistest.Start(t)
	// One connection, made before the pause: rueidis dials a connection of
	// its own without heeding the ctx, so a dial to a paused server holds
	// its caller for the dial timeout (5s), Close or not.
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, PipelineMultiplex: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	counted := redistest.NewCounting(rc)
	c, err := leasehold.New(counted)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv.Pause()
	defer srv.Resume()
	sent := counted.Rounds()
	var inFlight []*lease.Future
	for i := range 5 {
		inFlight = append(inFlight, rlock.New(c, fmt.Sprint("in-flight:", i)).AcquireAsync(context.Background()))
	}
	// Each has sent its script, which Redis does not answer.
	waitFor(t, func() bool { return counted.Rounds() >= sent+5 }, "5 scripts sent")
	start := time.Now()
	c.Close()
	took := time.Since(start)
	t.Logf("Close took %v", took)
	if took > closeBound {
		t.Fatalf("Close took %v with acquisitions in flight, want at most %v", took, closeBound)
	}
	for _, f := range inFlight {
		if _, err := f.Result(); !errors.Is(err, lease.ErrClosed) {
			t.Fatalf("an acquisition in flight after Close: %v, want ErrClosed", err)
		}
	}
}

// waitFor polls cond until it holds, failing the test after 10s.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A Release of a lease that is lost, before or while the release waits for
// Redis, returns at once an error that says so (wrapping lease.ErrNotHeld
// and lease.ErrLost), never that the lease is still held. Before, with Redis
// out of reach (here paused), it waited its 5s and said "not confirmed
// within 5s, so the lease is still held" while Lost had closed seconds
// earlier.
func TestReleaseOfLostLease(t *testing.T) {
	const watchdog = 900 * time.Millisecond // the local deadline: about 880ms after the last renewal
	for _, tt := range []struct {
		name   string
		before bool // lost before Release is called
		ctx    func() (context.Context, context.CancelFunc)
	}{
		{"lost before", true, func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }},
		{"lost during", false, func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }},
		{"lost during, a request's ctx", false, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 10*time.Second)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			c := clientKinds[0].open(t, srv.Option(), leasehold.WithWatchdog(watchdog))
			l := mustHold(t)(rlock.New(c, "lost-release").Acquire(context.Background()))
			srv.Pause()
			defer srv.Resume()
			if tt.before {
				select {
				case <-l.Lost():
				case <-time.After(watchdog + heard):
					t.Fatal("Lost still open after the local deadline")
				}
			}
			ctx, cancel := tt.ctx()
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- l.Release(ctx) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(watchdog + heard):
				t.Fatalf("Release still waiting %v later (lost: %v)", watchdog+heard, l.Err())
			}
			// At once: by the time Lost is closed or soon after.
			select {
			case <-l.Lost():
			default:
				t.Fatalf("Release returned %v before the lease was lost", err)
			}
			if !errors.Is(err, lease.ErrNotHeld) || !errors.Is(err, lease.ErrLost) {
				t.Fatalf("Release = %v, want an error wrapping ErrNotHeld and ErrLost", err)
			}
			if msg := err.Error(); strings.Contains(msg, "still held") || !strings.Contains(msg, "lost") {
				t.Fatalf("Release = %q, want it to say lost, not held", msg)
			}
		})
	}
}
