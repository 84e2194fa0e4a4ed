package leasehold_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

// A watchdog or lease time under MinLease is refused with ErrInvalid. Found
// by FuzzLock: a watchdog of a few nanoseconds made the keeper's ticker
// (watchdog/3 = 0) panic in its own goroutine, taking the process down; a
// lease of a millisecond or two was lost before its acquisition returned,
// and the acquisition failed with a puzzling "not held".
func TestMinLease(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, d := range []time.Duration{time.Nanosecond, 2 * time.Nanosecond, time.Millisecond, leasehold.MinLease - 1} {
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
	c, err := leasehold.New(rc, leasehold.WithWatchdog(leasehold.MinLease))
	if err != nil {
		t.Fatalf("WithWatchdog(MinLease): %v", err)
	}
	defer c.Close()
	if ls, err := rlock.New(c, "min").TryAcquire(ctx); err == nil {
		_ = ls.Release(ctx)
	} else if !errors.Is(err, lease.ErrLost) { // a very loaded machine: ran out first
		t.Fatalf("a lease of MinLease: %v", err)
	}
}
