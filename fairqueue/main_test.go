package fairqueue_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/harness/locktest"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/internal/harness/testmain"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/script"
)

// helperEnv, when set to a Redis address, turns the test binary into a
// waiter process for TestVanishedWaiterIsSkipped: it queues for the lock and
// waits until it is killed.
const helperEnv = "FAIRQUEUE_HELPER_REDIS"

func TestMain(m *testing.M) {
	if addr := os.Getenv(helperEnv); addr != "" {
		os.Exit(helperWaiter(addr))
	}
	testmain.Run(m, []*string{&redisAddr}, goleak.IgnoreCurrent())
}

// Shared test helpers (internal/harness/locktest).
var (
	open        = locktest.Open
	eventually  = locktest.Eventually
	ctxTimeout  = locktest.Ctx
	mustAcquire = locktest.MustAcquire
	release     = locktest.Release
	isLost      = locktest.IsLost
	wantErr     = locktest.WantErr
	calls       = locktest.Calls
)

func helperWaiter(addr string) int {
	qt, err := time.ParseDuration(os.Getenv(helperEnv + "_QT"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ls, err := fairqueue.New(c, os.Getenv(helperEnv+"_LOCK"), leasehold.WithQueueTimeout(qt)).Acquire(context.Background())
	fmt.Fprintln(os.Stderr, "helper waiter got", ls, err) // it should be killed first
	time.Sleep(time.Hour)
	return 1
}

// queue is the list of waiting owners of the fair lock name, oldest first.
func queue(t *testing.T, srv *redistest.Server, name string) []string {
	t.Helper()
	q, err := srv.Do("LRANGE", script.KeysOf(name).FairQueue, "0", "-1").AsStrSlice()
	if err != nil {
		t.Fatalf("LRANGE: %v", err)
	}
	return q
}

// queued waits until the queue of name holds n waiters and returns it.
func queued(t *testing.T, srv *redistest.Server, name string, n int) []string {
	t.Helper()
	var q []string
	eventually(t, 10*time.Second, fmt.Sprintf("%d waiters in the queue of %s", n, name), func() bool {
		q = queue(t, srv, name)
		return len(q) == n
	})
	return q
}

// wakeups sums the hub wake-ups of the Clients.
func wakeups(cs ...*leasehold.Client) uint64 {
	var n uint64
	for _, c := range cs {
		n += c.Stats().Wakeups
	}
	return n
}

// result is the outcome of an Acquire run in a goroutine.
type result struct {
	ls  *lease.Lease
	err error
}

// goAcquire runs l.Acquire(ctx) in a goroutine and delivers its outcome.
func goAcquire(l lease.Locker, ctx context.Context) <-chan result {
	ch := make(chan result, 1)
	go func() {
		ls, err := l.Acquire(ctx)
		ch <- result{ls, err}
	}()
	return ch
}

// await returns the lease an Acquire goroutine delivers within d.
func await(t *testing.T, ch <-chan result, d time.Duration, what string) *lease.Lease {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("%s: %v", what, r.err)
		}
		return r.ls
	case <-time.After(d):
		t.Fatalf("%s: not acquired within %v", what, d)
		return nil
	}
}
