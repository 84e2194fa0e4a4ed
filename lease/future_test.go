package lease

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Futures over a stand-in acquire function: the Future's own rules, without
// Redis (the Redis-backed behaviour is in rlock's tests).
func TestFutureCancelWhileWaiting(t *testing.T) {
	started := make(chan struct{})
	f, run := newFuture(context.Background(), func(ctx context.Context) (*Lease, error) {
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
	f, run := newFuture(ctx, func(ctx context.Context) (*Lease, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	go run()
	if _, err := f.Result(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Result = %v, want the parent's deadline", err)
	}
}
