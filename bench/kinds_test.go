package bench_test

import (
	"context"
	"flag"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/rw"
	"github.com/leasehold/leasehold/semaphore"
)

// Leasehold's lock kinds other than rlock, and leasehold without client
// tracking, each a runner of its own beside the peers in Uncontended,
// ParallelDistinct and Contended. They are opt-in flags, which bench.sh sets
// (about two minutes of its 14 with five counts), so that a plain go test
// -bench, as CI's -benchtime=1x run, stays on the peer comparison;
// TestRunners keeps them working.
var (
	withKinds = flag.Bool("bench.kinds", false, "also run leasehold's other lock kinds (fair, rw read, rw write, semaphore) "+
		"in Uncontended, ParallelDistinct and Contended (bench.sh does)")
	withVariants = flag.Bool("bench.variants", false, "also run leasehold variants that show where its Redis cost goes "+
		"(in rueidis' pipelined mode) in Uncontended and ParallelDistinct (bench.sh does)")
)

// kinds are the runners of leasehold's other lock kinds, on the same
// rueidis client options as the leasehold runner. The semaphore has one
// permit: in Contended, one semaphore, so that it is a mutex and a handoff
// means what it does for the others; in ParallelDistinct each goroutine has a
// semaphore of its own, as each has a lock of its own, and one permit is
// enough for its one holder, so nobody waits. rw's read lock is shared by
// its holders: Contended leaves it out, having no handoff to time.
var kinds = []libMaker{
	{name: "leasehold-fair", make: leaseholdKind(fairKind{})},
	{name: "leasehold-rw-read", make: leaseholdKind(rwKind{}), shared: true},
	{name: "leasehold-rw-write", make: leaseholdKind(rwKind{write: true})},
	{name: "leasehold-semaphore", make: leaseholdKind(semaphoreKind{})},
}

// variants run rlock as the leasehold runner does with one difference each.
// leasehold-pipelined dials with AlwaysPipelining: rueidis then runs the
// connection in its pipelined mode, where every command crosses a writer
// and a reader goroutine, as an OnInvalidations hook on it makes it do (Open
// set one until its invalidations moved to the tracking connection): the
// difference from the leasehold row is that mode's cost alone.
var variants = []libMaker{
	{name: "leasehold-pipelined", make: func(tb testing.TB, addr string, ttl time.Duration) library {
		opt := leaseholdOption(addr)
		opt.AlwaysPipelining = true
		return openLeasehold(tb, opt, ttl, rlockKind{})
	}},
}

// scenarioLibs are the runners of Uncontended and ParallelDistinct, or of
// Contended: the peers, then the kinds with -bench.kinds, then (not in
// Contended) the variants with -bench.variants.
func scenarioLibs(contended bool) []libMaker {
	libs := libraries
	if *withKinds {
		for _, k := range kinds {
			if !contended || !k.shared {
				libs = append(libs[:len(libs):len(libs)], k)
			}
		}
	}
	if *withVariants && !contended {
		libs = append(libs[:len(libs):len(libs)], variants...)
	}
	return libs
}

// leaseholdKind makes leasehold runners of kind.
func leaseholdKind(kind lockKind) func(tb testing.TB, addr string, ttl time.Duration) library {
	return func(tb testing.TB, addr string, ttl time.Duration) library {
		return openLeasehold(tb, leaseholdOption(addr), ttl, kind)
	}
}

// lockKind makes the lock of one leasehold kind for a name, as a user would,
// ready to take.
type lockKind interface {
	locker(ctx context.Context, c *leasehold.Client, name string) (lease.Locker, error)
}

type rlockKind struct{}

func (rlockKind) locker(_ context.Context, c *leasehold.Client, name string) (lease.Locker, error) {
	return rlock.New(c, name), nil
}

// fairKind is fairqueue with its default queue timeout.
type fairKind struct{}

func (fairKind) locker(_ context.Context, c *leasehold.Client, name string) (lease.Locker, error) {
	return fairqueue.New(c, name), nil
}

type rwKind struct{ write bool }

func (k rwKind) locker(_ context.Context, c *leasehold.Client, name string) (lease.Locker, error) {
	l := rw.New(c, name)
	if k.write {
		return l.Write(), nil
	}
	return l.Read(), nil
}

// semaphoreKind is a semaphore of one permit, a lease per permit.
type semaphoreKind struct{}

func (semaphoreKind) locker(ctx context.Context, c *leasehold.Client, name string) (lease.Locker, error) {
	s := semaphore.New(c, name)
	// Set once by whichever goroutine comes first; the others find it set.
	if _, err := s.TrySetPermits(ctx, 1); err != nil {
		return nil, err
	}
	return s, nil
}
