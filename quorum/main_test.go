package quorum_test

import (
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/internal/harness/testmain"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/script"
)

// TestMain runs the tests, and the examples against three redis-servers of
// their own, and checks for leaked goroutines.
func TestMain(m *testing.M) {
	testmain.Run(m, []*string{&redisAddrs[0], &redisAddrs[1], &redisAddrs[2]}, goleak.IgnoreCurrent())
}

// Shared test helpers (internal/harness/locktest).
var (
	open        = locktest.Open
	openAt      = locktest.OpenAt
	eventually  = locktest.Eventually
	ctxTimeout  = locktest.Ctx
	mustAcquire = locktest.MustAcquire
	release     = locktest.Release
	isLost      = locktest.IsLost
	wantErr     = locktest.WantErr
	wantMsg     = locktest.WantMsg
)

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
	n, err := srv.Do("GET", script.KeysOf(name).Token).AsUint64()
	if err != nil {
		return 0
	}
	return n
}

// ahead is a fencing counter value an hour ahead of the server's clock, so
// that tokens drawn after it rise by exactly 1 (a token is max(counter + 1,
// the clock in µs)) and tests can name them.
var ahead = uint64(time.Now().Add(time.Hour).UnixMicro())

// at is ahead + n, as a counter value.
func at(n uint64) string { return strconv.FormatUint(ahead+n, 10) }

func setCounter(t testing.TB, srv *redistest.Server, name string, v string) {
	t.Helper()
	if err := srv.Do("SET", script.KeysOf(name).Token, v).Error(); err != nil {
		t.Fatal(err)
	}
}
