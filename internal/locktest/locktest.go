// Package locktest holds the helpers the lock packages' tests share: a
// Client per test, polling for a condition, acquiring and releasing with
// failures reported, checking errors. Tests alias what they use:
//
//	var eventually = locktest.Eventually
package locktest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/redistest"
	"github.com/leasehold/leasehold/lease"
)

// Open returns a Client on srv, closed when the test ends.
func Open(tb testing.TB, srv *redistest.Server, opts ...leasehold.Option) *leasehold.Client {
	tb.Helper()
	return OpenAt(tb, srv.Option(), opts...)
}

// OpenAt returns a Client dialled with opt, closed when the test ends.
func OpenAt(tb testing.TB, opt rueidis.ClientOption, opts ...leasehold.Option) *leasehold.Client {
	tb.Helper()
	c, err := leasehold.Open(opt, opts...)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// Eventually polls cond every few ms until it holds, failing the test with
// what if d passes first.
func Eventually(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Ctx returns a context that ends after d, or when the test ends.
func Ctx(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}

// MustAcquire acquires l, failing the test on error.
func MustAcquire(tb testing.TB, l lease.Locker, ctx context.Context) *lease.Lease {
	tb.Helper()
	ls, err := l.Acquire(ctx)
	if err != nil {
		tb.Fatalf("Acquire: %v", err)
	}
	return ls
}

// Release releases ls, failing the test on error.
func Release(tb testing.TB, ls *lease.Lease) {
	tb.Helper()
	if err := ls.Release(context.Background()); err != nil {
		tb.Fatalf("Release: %v", err)
	}
}

// IsLost reports whether ls's Lost channel is closed.
func IsLost(ls *lease.Lease) bool {
	select {
	case <-ls.Lost():
		return true
	default:
		return false
	}
}

// WantErr fails the test unless err wraps target.
func WantErr(tb testing.TB, err, target error) {
	tb.Helper()
	if !errors.Is(err, target) {
		tb.Fatalf("error %v, want one wrapping %v", err, target)
	}
}

// WantMsg fails the test unless err says sub.
func WantMsg(tb testing.TB, err error, sub string) {
	tb.Helper()
	if err == nil || !strings.Contains(err.Error(), sub) {
		tb.Fatalf("error %v, want one saying %q", err, sub)
	}
}
