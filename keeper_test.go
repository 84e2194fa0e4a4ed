package leasehold_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

// open is locktest.Open: a Client on srv, closed when the test ends.
var open = locktest.Open

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// The keeper renews every watchdog lease of a Client in one pipelined round
// per tick, whatever their number: 200 leases cost one DoMulti a tick, not
// 200 timers.
func TestKeeperRenewsInOneRoundPerTick(t *testing.T) {
	srv := redistest.Start(t)
	const watchdog = 600 * time.Millisecond
	c := open(t, srv, leasehold.WithWatchdog(watchdog))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var held []*lease.Lease
	for i := 0; i < 200; i++ {
		l, err := rlock.New(c, fmt.Sprintf("kept-%d", i)).Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	if c.Stats().Leases != 200 {
		t.Fatalf("keeper keeps %d holds, want 200", c.Stats().Leases)
	}
	rounds, calls := c.Stats().RenewalRounds, locktest.Calls(t, srv, "evalsha")
	time.Sleep(5 * watchdog) // about 15 ticks of watchdog/3
	dRounds, dCalls := c.Stats().RenewalRounds-rounds, locktest.Calls(t, srv, "evalsha")-calls
	// 15 ticks expected. A ticker drops the ticks a busy machine misses, so
	// there are never more; fewer than one round per watchdog period would
	// let the leases run out, which the loop below checks on its own.
	if dRounds < 4 || dRounds > 20 {
		t.Fatalf("%d renewal rounds in 5 watchdog periods, want about 15", dRounds)
	}
	// Every round renews all 200. A round is counted as it is sent, and the
	// server's count may be read in the middle of a round's pipeline, at the
	// first reading as at the last: so the scripts run are those of the
	// rounds counted, give or take one round.
	if lo, hi := 200*(int64(dRounds)-1), 200*(int64(dRounds)+1); dCalls < lo || dCalls > hi {
		t.Fatalf("%d renewal scripts in %d rounds of 200 leases, want %d to %d", dCalls, dRounds, lo, hi)
	}
	for _, l := range held {
		if l.Err() != nil {
			t.Fatalf("lease lost while renewed: %v", l.Err())
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if c.Stats().Leases != 0 {
		t.Fatalf("keeper keeps %d holds after every release", c.Stats().Leases)
	}
}

// A watchdog lease's deadline moves forward with each renewal; a fixed
// lease's does not.
func TestDeadline(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv, leasehold.WithWatchdog(600*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	before := time.Now()
	w, err := rlock.New(c, "renewed").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := w.Deadline()
	if !first.After(before) || first.After(before.Add(600*time.Millisecond)) {
		t.Fatalf("deadline %v not within the lease after %v", first, before)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !w.Deadline().After(first) {
		if time.Now().After(deadline) {
			t.Fatal("renewal never moved the deadline")
		}
		time.Sleep(10 * time.Millisecond)
	}
	f, err := rlock.New(c, "fixed", leasehold.WithLeaseTime(time.Second)).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := f.Deadline()
	time.Sleep(400 * time.Millisecond)
	if !f.Deadline().Equal(d) {
		t.Fatal("a fixed lease's deadline moved")
	}
	_ = w.Release(ctx)
	_ = f.Release(ctx)
}

// Renewal that finds the lock gone reports the loss at the next tick.
func TestRenewalFindsLockGone(t *testing.T) {
	srv := redistest.Start(t)
	const watchdog = 600 * time.Millisecond
	// On a server that refuses CLIENT TRACKING the renewal is the only one
	// to notice (with it, the guard hears first: see TestLostAtOnce).
	opt := locktest.Denied(t, srv, "client") // Redis 6.2 denies no subcommand alone
	opt.DisableCache = true
	c := locktest.OpenAt(t, opt, leasehold.WithWatchdog(watchdog))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := rlock.New(c, "stolen").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv.Do("DEL", "stolen")
	select {
	case <-l.Lost():
	case <-time.After(watchdog + 2*time.Second):
		t.Fatal("renewal did not notice the lock was gone")
	}
	if err := l.Err(); err == nil || !contains(err.Error(), "renewal") {
		t.Fatalf("Err = %v, want the renewal's reason", err)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
