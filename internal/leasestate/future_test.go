package leasestate

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// lease stands for a *lease.Lease.
type lease struct{ released bool }

func newFuture(ctx context.Context, acquire func(context.Context) (*lease, error)) (*Future[*lease], func()) {
	return NewFuture(ctx, acquire, func(l *lease) { l.released = true })
}

// Futures over a stand-in acquire function: the Future's own rules, without
// Redis (the Redis-backed behaviour is in rlock's tests).
func TestFutureCancelWhileWaiting(t *testing.T) {
	started := make(chan struct{})
	f, run := newFuture(context.Background(), func(ctx context.Context) (*lease, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	go run()
	<-started
	select {
	case <-f.Done():
		t.Fatal("done before the attempt ended")
	default:
	}
	f.Cancel()
	select {
	case <-f.Done():
	default:
		t.Fatal("Cancel returned before the attempt ended")
	}
	if _, err := f.Result(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Result after Cancel = %v", err)
	}
	f.Cancel() // again: a no-op
}

func TestFutureParentContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	f, run := newFuture(ctx, func(ctx context.Context) (*lease, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	go run()
	if _, err := f.Result(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Result = %v, want the parent's deadline", err)
	}
}

// A lease won after Cancel is given back, and Result reports the cancel.
func TestFutureCancelGivesBackLateLease(t *testing.T) {
	won := &lease{}
	proceed := make(chan struct{})
	f, run := newFuture(context.Background(), func(ctx context.Context) (*lease, error) {
		<-proceed
		return won, nil
	})
	go run()
	go func() { time.Sleep(10 * time.Millisecond); close(proceed) }()
	f.Cancel()
	if l, err := f.Result(); l != nil || !errors.Is(err, context.Canceled) || !won.released {
		t.Fatalf("Result = %v, %v; released %v: want nil, Canceled, released", l, err, won.released)
	}
}

// A lease Result handed out is the caller's: a later Cancel leaves it.
func TestFutureCancelAfterResultKeepsLease(t *testing.T) {
	won := &lease{}
	f, run := newFuture(context.Background(), func(context.Context) (*lease, error) { return won, nil })
	go run()
	if l, err := f.Result(); l != won || err != nil {
		t.Fatalf("Result = %v, %v", l, err)
	}
	f.Cancel()
	if won.released {
		t.Fatal("Cancel after Result released the caller's lease")
	}
}
