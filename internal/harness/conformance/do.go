package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

// Work under lease.Do stops when the lock is lost, within a second of a
// force release (at once with client-side caching, at the next renewal on the
// kit), and Do says it was lost; TryDo skips work that
// another process holds.
func testDoStopsOnLoss(t *testing.T, suite Suite) {
	srv := suite.NewServer(t)
	worker, operator := srv.Open(), srv.Open()
	ctx := ctxTimeout(t, 30*time.Second)
	started := make(chan struct{})
	done := make(chan error, 1)
	var cause error
	go func() {
		done <- lease.Do(ctx, rlock.New(worker, "job"), func(ctx context.Context) error {
			close(started)
			<-ctx.Done() // the work, until the lock is lost
			cause = context.Cause(ctx)
			return nil
		})
	}()
	<-started
	err := lease.TryDo(ctx, rlock.New(operator, "job"), func(context.Context) error {
		t.Error("TryDo ran fn while another process held the lock")
		return nil
	})
	wantErr(t, err, lease.ErrNotAcquired)

	removed := time.Now()
	if ok, err := rlock.New(operator, "job").ForceRelease(ctx); !ok || err != nil {
		t.Fatalf("ForceRelease = %v, %v", ok, err)
	}
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Do's work still running 5s after the lock was removed")
	}
	// Heard at once, or on the kit at its next renewal, every 0.5s; a second
	// allows for a loaded machine.
	if el := time.Since(removed); el > time.Second {
		t.Fatalf("work stopped %v after the removal, want within 1s", el)
	}
	wantErr(t, err, lease.ErrLost)
	if !errors.Is(cause, lease.ErrLost) {
		t.Fatalf("fn's context.Cause %v, want one wrapping ErrLost", cause)
	}
}

// A job that replicas run on the same schedule runs once: with
// WithHoldAtLeast its lock stays taken after a quick run until the hold is
// over, then the next run takes it.
func testHoldAtLeastRunsOnce(t *testing.T, suite Suite) {
	srv := suite.NewServer(t)
	ctx := ctxTimeout(t, 30*time.Second)
	const hold = 500 * time.Millisecond
	runs := 0
	job := func(context.Context) error { runs++; return nil }
	start := time.Now()
	for _, replica := range []*leasehold.Client{srv.Open(), srv.Open(), srv.Open()} {
		err := lease.TryDo(ctx, rlock.New(replica, "nightly", leasehold.WithHoldAtLeast(hold)), job)
		if err != nil && !errors.Is(err, lease.ErrNotAcquired) {
			t.Fatal(err)
		}
	}
	if runs != 1 {
		t.Fatalf("the job ran %d times in %v, want once", runs, time.Since(start))
	}
	ls := acquire(t, ctx, rlock.New(srv.Open(), "nightly"))
	if el := time.Since(start); el < hold {
		t.Fatalf("the lock was free %v after a run kept for %v", el, hold)
	}
	release(t, ls)
}
