package rw_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/internal/harness/testmain"
	"github.com/leasehold/leasehold/lease"
)

// TestMain runs the tests, and the examples against a redis-server of
// their own, and checks for leaked goroutines.
func TestMain(m *testing.M) { testmain.Run(m, []*string{&redisAddr}, goleak.IgnoreCurrent()) }

// Shared test helpers (internal/harness/locktest).
var (
	open        = locktest.Open
	openOpt     = locktest.OpenAt
	eventually  = locktest.Eventually
	ctxTimeout  = locktest.Ctx
	mustAcquire = locktest.MustAcquire
	release     = locktest.Release
	isLost      = locktest.IsLost
	wantErr     = locktest.WantErr
	result      = locktest.Result
	isDone      = locktest.IsDone
)

// woken bounds how long a waiter may take to get the lock after the event
// that frees it. Leases in these tests are 30s (the default watchdog) unless
// said otherwise, so a waiter inside this bound was woken by a message or an
// invalidation, not by its TTL timer; 2s leaves room for two loaded cores.
const woken = 2 * time.Second

func mustTry(t *testing.T, l lease.Locker, ctx context.Context) *lease.Lease {
	t.Helper()
	ls, err := l.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("TryAcquire: %v", err)
	}
	return ls
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

func waiters(c *leasehold.Client) int { return c.Stats().Waiters }
