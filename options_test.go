package leasehold_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/election"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/rw"
	"github.com/leasehold/leasehold/semaphore"
)

// A watchdog or lease time under minLease is refused with ErrInvalid. Found
// by FuzzLock: a watchdog of a few nanoseconds made the keeper's ticker
// (watchdog/3 = 0) panic in its own goroutine, taking the process down; a
// lease of a millisecond or two was lost before its acquisition returned,
// and the acquisition failed with a puzzling "not held".
func TestMinLease(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, d := range []time.Duration{time.Nanosecond, 2 * time.Nanosecond, time.Millisecond, minLease - 1} {
		if _, err := leasehold.New(rc, leasehold.WithWatchdog(d)); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("WithWatchdog(%v): %v, want ErrInvalid", d, err)
		}
		c, err := leasehold.New(rc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rlock.New(c, "short", leasehold.WithLeaseTime(d)).TryAcquire(ctx); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("WithLeaseTime(%v): %v, want ErrInvalid", d, err)
		}
		c.Close()
	}
	c, err := leasehold.New(rc, leasehold.WithWatchdog(minLease))
	if err != nil {
		t.Fatalf("WithWatchdog(minLease): %v", err)
	}
	defer c.Close()
	if ls, err := rlock.New(c, "min").TryAcquire(ctx); err == nil {
		_ = ls.Release(ctx)
	} else if !errors.Is(err, lease.ErrLost) { // a very loaded machine: ran out first
		t.Fatalf("a lease of minLease: %v", err)
	}
}

// An option a kind does not take is refused at the lock's first call, naming
// the option, and nothing is written; before, WithQueueTimeout on an rlock
// and WithWriterPreference on a fair lock were silently ignored. The kinds
// that take them still do.
func TestOptionOfAnotherKind(t *testing.T) {
	srv := redistest.Start(t)
	c, err := leasehold.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	queue, prefer := leasehold.WithQueueTimeout(time.Second), leasehold.WithWriterPreference()
	atLeast := leasehold.WithHoldAtLeast(time.Millisecond)
	tests := []struct {
		give   string
		locker lease.Locker
		want   string // the option named in the error; "" for none
	}{
		{"rlock, queue timeout", rlock.New(c, "o1", queue), "leasehold.WithQueueTimeout"},
		{"rlock, writer preference", rlock.New(c, "o2", prefer), "leasehold.WithWriterPreference"},
		{"fair, writer preference", fairqueue.New(c, "o3", prefer), "leasehold.WithWriterPreference"},
		{"rw read, queue timeout", rw.New(c, "o4", queue).Read(), "leasehold.WithQueueTimeout"},
		{"rw write, queue timeout", rw.New(c, "o5", queue).Write(), "leasehold.WithQueueTimeout"},
		{"semaphore, queue timeout", semaphore.New(c, "o6", queue), "leasehold.WithQueueTimeout"},
		{"fair, queue timeout", fairqueue.New(c, "o7", queue, leasehold.WithLeaseTime(time.Minute)), ""},
		{"rw, writer preference", rw.New(c, "o8", prefer).Write(), ""},
		{"rw read, hold at least", rw.New(c, "o10", atLeast).Read(), "leasehold.WithHoldAtLeast"},
		{"rw write, hold at least", rw.New(c, "o11", atLeast).Write(), "leasehold.WithHoldAtLeast"},
		{"semaphore, hold at least", semaphore.New(c, "o12", atLeast), "leasehold.WithHoldAtLeast"},
		{"rlock, hold at least", rlock.New(c, "o7-rlock", atLeast), ""},
		{"fair, hold at least", fairqueue.New(c, "o8-fair", atLeast, queue), ""},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			ls, err := tt.locker.TryAcquire(ctx)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("TryAcquire: %v", err)
				}
				_ = ls.Release(ctx)
				return
			}
			if !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("TryAcquire: %v, want ErrInvalid naming %s", err, tt.want)
			}
		})
	}
	if _, err := election.New(c, "o9", queue).Campaign(ctx, "v"); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("election with a queue timeout: %v, want ErrInvalid", err)
	}
	if _, err := election.New(c, "o13", atLeast).Campaign(ctx, "v"); !errors.Is(err, lease.ErrInvalid) ||
		!strings.Contains(err.Error(), "leasehold.WithHoldAtLeast") {
		t.Errorf("election with hold at least: %v, want ErrInvalid naming leasehold.WithHoldAtLeast", err)
	}
	// Only the accepted locks (o7, o8) left keys: their fencing counters,
	// and the locks kept a millisecond, if that has not passed yet.
	keys, err := srv.Client().Do(ctx, srv.Client().B().Keys().Pattern("*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.Contains(k, "o7") && !strings.Contains(k, "o8") {
			t.Errorf("key %q written by a refused call", k)
		}
	}
}

// minLease is the shortest lease leasehold accepts (WithWatchdog, WithLeaseTime).
const minLease = 10 * time.Millisecond
