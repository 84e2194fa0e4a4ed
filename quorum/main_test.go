package quorum_test

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
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/script"
)

// TestMain runs the tests, and the examples against three redis-servers of
// their own, and checks for leaked goroutines.
func TestMain(m *testing.M) {
	testmain.Run(m, []*string{&redisAddrs[0], &redisAddrs[1], &redisAddrs[2]})
}

// open returns a Client on srv, closed when the test ends.
func open(t testing.TB, srv *redistest.Server, opts ...leasehold.Option) *leasehold.Client {
	t.Helper()
	return openAt(t, srv.Option(), opts...)
}

func openAt(t testing.TB, opt rueidis.ClientOption, opts ...leasehold.Option) *leasehold.Client {
	t.Helper()
	c, err := leasehold.Open(opt, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// cluster starts n independent redis-servers and one Client on each.
func cluster(t testing.TB, n int, opts ...leasehold.Option) ([]*redistest.Server, []*leasehold.Client) {
	t.Helper()
	srvs := make([]*redistest.Server, n)
	for i := range srvs {
		srvs[i] = redistest.Start(t)
	}
	return srvs, clients(t, srvs, opts...)
}

// clients opens one more Client on each server: another process's view.
func clients(t testing.TB, srvs []*redistest.Server, opts ...leasehold.Option) []*leasehold.Client {
	t.Helper()
	cs := make([]*leasehold.Client, len(srvs))
	for i, s := range srvs {
		cs[i] = open(t, s, opts...)
	}
	return cs
}

// members is the rlock name on each Client.
func members(cs []*leasehold.Client, name string, opts ...leasehold.LockOption) []lease.Locker {
	ls := make([]lease.Locker, len(cs))
	for i, c := range cs {
		ls[i] = rlock.New(c, name, opts...)
	}
	return ls
}

// block makes a foreign owner hold name on srv for a minute.
func block(t testing.TB, srv *redistest.Server, name string) {
	t.Helper()
	if err := srv.Do("HSET", name, "foreign:1", "1").Error(); err != nil {
		t.Fatal(err)
	}
	srv.Do("PEXPIRE", name, "60000")
}

func unblock(t testing.TB, srv *redistest.Server, name string) {
	t.Helper()
	srv.Do("DEL", name)
}

func exists(t testing.TB, srv *redistest.Server, key string) bool {
	t.Helper()
	n, err := srv.Do("EXISTS", key).AsInt64()
	if err != nil {
		t.Fatalf("EXISTS %s: %v", key, err)
	}
	return n == 1
}

// counter is the fencing counter of name on srv.
func counter(t testing.TB, srv *redistest.Server, name string) uint64 {
	t.Helper()
	n, err := srv.Do("GET", script.TokenKey(name)).AsUint64()
	if err != nil {
		return 0
	}
	return n
}

func setCounter(t testing.TB, srv *redistest.Server, name string, v string) {
	t.Helper()
	if err := srv.Do("SET", script.TokenKey(name), v).Error(); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond every few ms until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func mustAcquire(t testing.TB, l lease.Locker, ctx context.Context) *lease.Lease {
	t.Helper()
	ls, err := l.Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	return ls
}

func release(t testing.TB, ls *lease.Lease) {
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

func wantErr(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want one wrapping %v", err, target)
	}
}

func wantMsg(t testing.TB, err error, sub string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), sub) {
		t.Fatalf("error %v, want one saying %q", err, sub)
	}
}
