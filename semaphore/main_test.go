package semaphore_test

import (
	"testing"

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/internal/harness/testmain"
)

// TestMain runs the tests, and the examples against a redis-server of
// their own, and checks for leaked goroutines.
func TestMain(m *testing.M) { testmain.Run(m, []*string{&redisAddr}, goleak.IgnoreCurrent()) }

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
	result      = locktest.Result
	isDone      = locktest.IsDone
)

// untracked returns a Client made with leasehold.New over a rueidis client
// of its own on srv, signed in as an ACL user refused CLIENT (TRACKING): its
// waiters hear no invalidations, only messages and timers, and the returned
// Counting counts its round trips. Both close when the test ends.
func untracked(tb testing.TB, srv *redistest.Server) (*leasehold.Client, *redistest.Counting) {
	tb.Helper()
	opt := locktest.Denied(tb, srv, "client") // Redis 6.2 denies no subcommand alone
	opt.DisableCache = true                   // rueidis' cache would need CLIENT TRACKING too
	rc, err := rueidis.NewClient(opt)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(rc.Close)
	cr := redistest.NewCounting(rc)
	c, err := leasehold.New(cr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c, cr
}
