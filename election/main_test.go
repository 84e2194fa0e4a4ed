package election_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/election"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/internal/harness/testmain"
	"github.com/leasehold/leasehold/lease"
)

// TestMain runs the tests, and the examples against a redis-server of
// their own, and checks for leaked goroutines. One goroutine of rueidis',
// not ours, may outlive a test by a few seconds and end on its own: a
// cluster client that refreshed its slot map closes the connections it
// dropped 5s later (TestMessagesAlone/cluster).
func TestMain(m *testing.M) {
	testmain.Run(m, []*string{&redisAddr}, goleak.IgnoreCurrent(),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"))
}

// Shared test helpers (internal/harness/locktest).
var (
	openAt     = locktest.OpenAt
	eventually = locktest.Eventually
	ctxTimeout = locktest.Ctx
	release    = locktest.Release
	isLost     = locktest.IsLost
	wantErr    = locktest.WantErr
	javaLock   = locktest.JavaLock
	javaUnlock = locktest.JavaUnlock
)

// watchdog is the tests' lease: a dead leader's term ends this long after
// its last renewal.
const watchdog = 500 * time.Millisecond

// open returns a Client on srv with the tests' short watchdog, closed when
// the test ends.
func open(t *testing.T, srv *redistest.Server, opts ...leasehold.Option) *leasehold.Client {
	t.Helper()
	return locktest.Open(t, srv, append([]leasehold.Option{leasehold.WithWatchdog(watchdog)}, opts...)...)
}

// campaign wins the election e with value, failing the test on error.
func campaign(t *testing.T, e *election.Election, ctx context.Context, value string) *lease.Lease {
	t.Helper()
	ls, err := e.Campaign(ctx, value)
	if err != nil {
		t.Fatalf("Campaign(%q): %v", value, err)
	}
	return ls
}

// outcome is a Campaign's result, for a campaign run in a goroutine.
type outcome struct {
	ls  *lease.Lease
	err error
}

// campaignAsync runs Campaign in a goroutine that the test waits for.
func campaignAsync(t *testing.T, e *election.Election, ctx context.Context, value string) <-chan outcome {
	t.Helper()
	ch := make(chan outcome, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ls, err := e.Campaign(ctx, value)
		ch <- outcome{ls, err}
	}()
	t.Cleanup(func() { <-done })
	return ch
}

// won waits up to d for a campaign run by campaignAsync and returns its
// lease, failing the test if it failed or is not done by then.
func won(t *testing.T, ch <-chan outcome, d time.Duration) *lease.Lease {
	t.Helper()
	select {
	case o := <-ch:
		if o.err != nil {
			t.Fatalf("Campaign: %v", o.err)
		}
		return o.ls
	case <-time.After(d):
		t.Fatalf("campaign not won within %v", d)
	}
	return nil
}

// next returns the next report of an Observe channel, failing the test if
// none comes within d or the channel is closed.
func next(t *testing.T, ch <-chan election.Leader, d time.Duration) election.Leader {
	t.Helper()
	select {
	case l, ok := <-ch:
		if !ok {
			t.Fatal("Observe channel closed")
		}
		return l
	case <-time.After(d):
		t.Fatalf("no report within %v", d)
	}
	return election.Leader{}
}

// of is the Leader a lease's campaign with value publishes.
func of(ls *lease.Lease, value string) election.Leader {
	return election.Leader{Value: value, Token: ls.Token(), Owner: ls.Owner()}
}

// openSlow returns a Client on srv with the default watchdog (30s), for
// tests that show a wake-up came from a message and not from a timer.
func openSlow(t *testing.T, srv *redistest.Server) *leasehold.Client {
	t.Helper()
	return locktest.Open(t, srv)
}
