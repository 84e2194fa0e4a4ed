package leaseholdotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold/lease"
	leaseholdotel "github.com/leasehold/leasehold/otel"
	"github.com/leasehold/leasehold/rlock"
)

// TestRegisterClient reads the Client's counters at each collection, adds
// up those of several Clients, and stops at unregister.
func TestRegisterClient(t *testing.T) {
	r := newRig(t)
	c, other := r.open(t, nil), r.open(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, name := range []string{"gauge:1", "gauge:2"} {
		if _, err := rlock.New(c, name).Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	held, err := rlock.New(other, "gauge:busy").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiter := rlock.New(c, "gauge:busy").AcquireAsync(ctx)
	defer waiter.Cancel()
	eventually(t, 10*time.Second, "a waiter", func() bool { return c.Stats().Waiters == 1 })

	unregister, err := leaseholdotel.RegisterClient(c, leaseholdotel.WithMeterProvider(r.mp))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"leasehold.leases.held": 2, "leasehold.waiters": 1, "leasehold.subscriptions": 1}
	ms := r.metrics(t)
	for name, v := range want {
		if got, ok := sum(ms, name); got != v || !ok {
			t.Errorf("%s = %d (%v), want %d", name, got, ok, v)
		}
	}
	if _, ok := sum(ms, "leasehold.renewal.rounds"); !ok {
		t.Error("no leasehold.renewal.rounds")
	}
	if _, ok := sum(ms, "leasehold.wakeups"); !ok {
		t.Error("no leasehold.wakeups")
	}

	// A second Client on the same provider: the counts add up.
	unregisterOther, err := leaseholdotel.RegisterClient(other, leaseholdotel.WithMeterProvider(r.mp))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := sum(r.metrics(t), "leasehold.leases.held"); got != 3 {
		t.Errorf("leasehold.leases.held of two Clients = %d, want 3", got)
	}

	// The waiter takes the lock: one more held, no waiter, one wake-up.
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := waiter.Result(); err != nil {
		t.Fatal(err)
	}
	ms = r.metrics(t)
	for name, v := range map[string]int64{"leasehold.leases.held": 3, "leasehold.waiters": 0} {
		if got, _ := sum(ms, name); got != v {
			t.Errorf("%s = %d, want %d", name, got, v)
		}
	}
	if got, _ := sum(ms, "leasehold.wakeups"); got < 1 {
		t.Errorf("leasehold.wakeups = %d, want at least 1", got)
	}

	if err := errors.Join(unregister(), unregisterOther()); err != nil {
		t.Fatal(err)
	}
	if got, ok := sum(r.metrics(t), "leasehold.leases.held"); ok {
		t.Errorf("leasehold.leases.held = %d after unregister, want no point", got)
	}
}

func TestRegisterNilClient(t *testing.T) {
	if _, err := leaseholdotel.RegisterClient(nil); !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("RegisterClient(nil): %v, want ErrInvalid", err)
	}
}
