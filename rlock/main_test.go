package rlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/redistest"
	"github.com/leasehold/leasehold/internal/testmain"
	"github.com/leasehold/leasehold/lease"
)

// TestMain runs the tests, and the examples against a redis-server of
// their own, and checks for leaked goroutines.
func TestMain(m *testing.M) { testmain.Run(m, []*string{&redisAddr}) }

// open returns a Client on srv, closed when the test ends.
func open(t *testing.T, srv *redistest.Server, opts ...leasehold.Option) *leasehold.Client {
	t.Helper()
	c, err := leasehold.Open(srv.Option(), opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// eventually polls cond every few ms until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func mustAcquire(t *testing.T, l lease.Locker, ctx context.Context) *lease.Lease {
	t.Helper()
	ls, err := l.Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	return ls
}

func release(t *testing.T, ls *lease.Lease) {
	t.Helper()
	if err := ls.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

func isLost(ls *lease.Lease) bool {
	select {
	case <-ls.Lost():
		return true
	default:
		return false
	}
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want one wrapping %v", err, target)
	}
}
