package rw_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/redistest"
	"github.com/leasehold/leasehold/internal/testmain"
	"github.com/leasehold/leasehold/lease"
)

// TestMain runs the tests, and the examples against a redis-server of
// their own, and checks for leaked goroutines.
func TestMain(m *testing.M) { testmain.Run(m, []*string{&redisAddr}) }

// woken bounds how long a waiter may take to get the lock after the event
// that frees it. Leases in these tests are 30s (the default watchdog) unless
// said otherwise, so a waiter inside this bound was woken by a message or an
// invalidation, not by its TTL timer; 2s leaves room for two loaded cores.
const woken = 2 * time.Second

// open returns a Client on srv, closed when the test ends.
func open(t *testing.T, srv *redistest.Server, opts ...leasehold.Option) *leasehold.Client {
	t.Helper()
	return openOpt(t, srv.Option(), opts...)
}

func openOpt(t *testing.T, opt rueidis.ClientOption, opts ...leasehold.Option) *leasehold.Client {
	t.Helper()
	c, err := leasehold.Open(opt, opts...)
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

func mustTry(t *testing.T, l lease.Locker, ctx context.Context) *lease.Lease {
	t.Helper()
	ls, err := l.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("TryAcquire: %v", err)
	}
	return ls
}

func release(t *testing.T, ls *lease.Lease) {
	t.Helper()
	if err := ls.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

// result waits for f within d and returns its lease.
func result(t *testing.T, f *lease.Future, d time.Duration) *lease.Lease {
	t.Helper()
	select {
	case <-f.Done():
	case <-time.After(d):
		t.Fatalf("waiter not done within %v", d)
	}
	ls, err := f.Result()
	if err != nil {
		t.Fatalf("waiter: %v", err)
	}
	return ls
}

func isDone(f *lease.Future) bool {
	select {
	case <-f.Done():
		return true
	default:
		return false
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

// hash is the lock hash NAME as Redis holds it.
func hash(t *testing.T, srv *redistest.Server, name string) map[string]string {
	t.Helper()
	m, err := srv.Do("HGETALL", name).AsStrMap()
	if err != nil {
		t.Fatalf("HGETALL %s: %v", name, err)
	}
	return m
}

// readers returns the read owner fields of the lock hash, and the writer's.
func owners(t *testing.T, srv *redistest.Server, name string) (readers []string, writer string) {
	t.Helper()
	for f := range hash(t, srv, name) {
		switch {
		case f == "mode":
		case strings.HasSuffix(f, ":write"):
			writer = f
		default:
			readers = append(readers, f)
		}
	}
	return readers, writer
}

// ownerOf returns the read owner field of the Client c in the lock hash.
func ownerOf(t *testing.T, srv *redistest.Server, name string, c *leasehold.Client) string {
	t.Helper()
	rs, _ := owners(t, srv, name)
	for _, r := range rs {
		if strings.HasPrefix(r, c.ID()+":") {
			return r
		}
	}
	t.Fatalf("no read owner of client %s in %v", c.ID(), hash(t, srv, name))
	return ""
}

func pttl(t *testing.T, srv *redistest.Server, key string) time.Duration {
	t.Helper()
	ms, err := srv.Do("PTTL", key).AsInt64()
	if err != nil {
		t.Fatalf("PTTL %s: %v", key, err)
	}
	return time.Duration(ms) * time.Millisecond
}

func exists(t *testing.T, srv *redistest.Server, key string) bool {
	t.Helper()
	n, err := srv.Do("EXISTS", key).AsInt64()
	if err != nil {
		t.Fatalf("EXISTS %s: %v", key, err)
	}
	return n == 1
}

func waiters(c *leasehold.Client) int { return c.Hub().Stats().Waiters }
