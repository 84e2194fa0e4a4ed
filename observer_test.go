package leasehold_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

type recorder struct {
	mu     sync.Mutex
	events []lease.Event
}

func (r *recorder) Observe(e lease.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) of(k lease.Kind) []lease.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []lease.Event
	for _, e := range r.events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

func TestObserver(t *testing.T) {
	srv := redistest.Start(t)
	rec := &recorder{}
	c, err := leasehold.Open(srv.Option(), leasehold.WithWatchdog(300*time.Millisecond), leasehold.WithObserver(rec))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	l := rlock.New(c, "observed")
	outer, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := l.Acquire(outer.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rlock.New(c, "observed").TryAcquire(ctx); !errors.Is(err, lease.ErrNotAcquired) {
		t.Fatalf("TryAcquire of a held lock from another owner: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(rec.of(lease.Renewed)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no Renewed event in 5s with a 300ms watchdog")
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = inner.Release(ctx)
	_ = outer.Release(ctx)
	fixed, err := rlock.New(c, "observed-fixed", leasehold.WithLeaseTime(200*time.Millisecond)).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	<-fixed.Lost()
	// The hold closes Lost before it tells the observer: wait for the event.
	for deadline := time.Now().Add(5 * time.Second); len(rec.of(lease.Lost)) == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}

	acq := rec.of(lease.Acquired)
	if len(acq) != 3 || acq[0].Name != "observed" || acq[0].Token != outer.Token() || acq[0].Owner != outer.Owner() {
		t.Fatalf("Acquired events %+v", acq)
	}
	if ab := rec.of(lease.Abandoned); len(ab) != 1 || !errors.Is(ab[0].Err, lease.ErrNotAcquired) {
		t.Fatalf("Abandoned events %+v", ab)
	}
	if rel := rec.of(lease.Released); len(rel) != 2 || rel[0].Token != inner.Token() || rel[1].Held <= 0 || rel[0].Err != nil {
		t.Fatalf("Released events %+v", rel)
	}
	if lost := rec.of(lease.Lost); len(lost) != 1 || lost[0].Name != "observed-fixed" || !errors.Is(lost[0].Err, lease.ErrLost) || lost[0].Held <= 0 {
		t.Fatalf("Lost events %+v", lost)
	}
	if r := rec.of(lease.Renewed)[0]; r.Name != "observed" || r.Took <= 0 || r.Round < 1 || r.Lock != "rlock" {
		t.Fatalf("Renewed event %+v", r)
	}
	// What a tracer or a metrics adapter reads: the lock kind, the caller's
	// ctx, and the attempts an acquisition made.
	for _, e := range append(acq, rec.of(lease.Abandoned)...) {
		if e.Lock != "rlock" || e.Context == nil || e.Attempts != 1 {
			t.Fatalf("%v event: lock kind %q, ctx %v, %d attempts; want rlock, the caller's ctx, 1", e.Kind, e.Lock, e.Context, e.Attempts)
		}
	}
	if rel := rec.of(lease.Released); rel[0].Context != ctx || rel[0].Lock != "rlock" {
		t.Fatalf("Released event: ctx %v, lock kind %q; want Release's ctx and rlock", rel[0].Context, rel[0].Lock)
	}
}
