// Package conformance is the behaviour every Redis leasehold runs on must
// show users, as tests: mutual exclusion with rising tokens, waiters woken
// by a release, leases running out on time, a removal heard within a
// second, reentrancy, every kind and the quorum locks, lease.Do. The
// library's suite runs it against redis-server, and the test kit's against
// its in-process Redis, so that the kit is held to the same assertions.
package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/lease"
)

// A Server is a Redis the suite runs on, owned by one test.
type Server interface {
	// Open returns a Client on the server, closed when the test ends;
	// several stand for several processes.
	Open(opts ...leasehold.Option) *leasehold.Client
	// Raw returns a plain rueidis client of the test's own on the server,
	// closed when the test ends, for what a test does behind the locks'
	// back (a DEL, a read of the layout).
	Raw(t *testing.T) rueidis.Client
}

// A Suite is how to start the servers the tests run on.
type Suite struct {
	// NewServer starts an empty server for t, stopped when t ends.
	NewServer func(t *testing.T) Server
}

// Run runs every test of the suite, each a subtest of t.
func Run(t *testing.T, s Suite) {
	for _, tt := range []struct {
		name string
		test func(*testing.T, Suite)
	}{
		{"MutualExclusion", testMutualExclusion},
		{"WakeOnRelease", testWakeOnRelease},
		{"FixedLeaseExpires", testFixedLeaseExpires},
		{"WatchdogKeepsLease", testWatchdogKeepsLease},
		{"ForceReleaseHeard", testForceReleaseHeard},
		{"Reentrancy", testReentrancy},
		{"ReentryFencesAsOneHolder", testReentryFencesAsOneHolder},
		{"CloseReleases", testCloseReleases},
		{"CancelledWaitHoldsNothing", testCancelledWaitHoldsNothing},
		{"WithReplicasNotReplicated", testWithReplicasNotReplicated},
		{"FairQueueOrder", testFairQueueOrder},
		{"ReadWrite", testReadWrite},
		{"Semaphore", testSemaphore},
		{"SemaphorePermitExpires", testSemaphorePermitExpires},
		{"Election", testElection},
		{"FairWaiterKeepsItsPlace", testFairWaiterKeepsItsPlace},
		{"LeaderLeaseRunsOut", testLeaderLeaseRunsOut},
		{"Multi", testMulti},
		{"RedLock", testRedLock},
		{"DoStopsOnLoss", testDoStopsOnLoss},
		{"HoldAtLeastRunsOnce", testHoldAtLeastRunsOnce},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.test(t, s) })
	}
}

// ctxTimeout is a ctx ending after d or with the test.
func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it holds, failing t after d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
	}
}

// acquire takes l or fails t.
func acquire(t *testing.T, ctx context.Context, l lease.Locker) *lease.Lease {
	t.Helper()
	ls, err := l.Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	return ls
}

// release gives ls back or fails t.
func release(t *testing.T, ls *lease.Lease) {
	t.Helper()
	if err := ls.Release(context.Background()); err != nil {
		t.Fatalf("Release %s: %v", ls.Name(), err)
	}
}

// result waits up to d for f's lease, failing t on an error or none.
func result(t *testing.T, f *lease.Future, d time.Duration) *lease.Lease {
	t.Helper()
	select {
	case <-f.Done():
	case <-time.After(d):
		t.Fatalf("no lease within %v", d)
	}
	ls, err := f.Result()
	if err != nil {
		t.Fatalf("waiter: %v", err)
	}
	return ls
}

// pending fails t if f has a result already.
func pending(t *testing.T, f *lease.Future, what string) {
	t.Helper()
	select {
	case <-f.Done():
		ls, err := f.Result()
		t.Fatalf("%s: %v, %v; want it still waiting", what, ls, err)
	default:
	}
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want one wrapping %v", err, target)
	}
}
