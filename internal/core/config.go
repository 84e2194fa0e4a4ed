package core

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/access"
	"github.com/leasehold/leasehold/lease"
)

// LockConfig is the configuration of one lock, resolved from its options and
// its Client.
type LockConfig struct {
	// LeaseTime is the fixed lease; zero means the watchdog renews.
	LeaseTime time.Duration
	// Watchdog is the Client's watchdog lease.
	Watchdog time.Duration
	// QueueTimeout is a fair-lock waiter's time in the queue between refreshes.
	QueueTimeout time.Duration
	// WriterPreference makes a read-write lock hold back readers while a
	// writer waits.
	WriterPreference bool
	// Observer is the Client's observer, nil for none.
	Observer lease.Observer
	// Replicas is how many replicas must acknowledge each acquisition
	// (WithReplicas), within ReplicaTimeout; 0 for none.
	Replicas       int
	ReplicaTimeout time.Duration
	// Err is the first invalid option, returned by the lock's first Acquire.
	Err error
}

// TTL is the lease Redis is given on each acquisition: the fixed lease time,
// or the watchdog's. It is the one source of the lease time: the scripts'
// arguments, the local deadline and the renewal all read it.
func (c LockConfig) TTL() time.Duration {
	if c.LeaseTime > 0 {
		return c.LeaseTime
	}
	return c.Watchdog
}

// Renewed reports whether the watchdog renews the lock's leases.
func (c LockConfig) Renewed() bool { return c.LeaseTime == 0 }

// Bind resolves what a lock constructor was given, a *leasehold.Client and
// its LockOptions (as any: this package cannot name the root package's
// types), into the Client's core (nil for a nil *leasehold.Client) and the
// lock's configuration. The root package sets it when it is initialised;
// every lock package imports the root package, so it is set before use.
var Bind func(client any, opts any) (*Client, LockConfig)

// Transient reports whether err may pass: a transport failure or a context
// ending, after which a script may or may not have run, or a Redis reply that
// says the server cannot serve the command for now (see unavailable). Other
// Redis error replies (a script error, WRONGTYPE) are not transient, nor are
// bad input, a closed Client, or replicas that did not acknowledge an
// acquisition (it was released; waiting would not bring them).
func Transient(err error) bool {
	if err == nil {
		return false
	}
	if e, ok := rueidis.IsRedisErr(err); ok {
		return unavailable(e.Error())
	}
	return !errors.Is(err, lease.ErrInvalid) && !errors.Is(err, lease.ErrClosed) &&
		!errors.Is(err, lease.ErrNotReplicated) && !errors.Is(err, lease.ErrRedis)
}

// NewFuture returns a Future for acquire and the function that runs it; the
// caller runs it exactly once, in a goroutine it waits for.
func NewFuture(ctx context.Context, acquire func(context.Context) (*lease.Lease, error)) (*lease.Future, func()) {
	f, run := access.NewFuture(ctx, func(ctx context.Context) (any, error) {
		l, err := acquire(ctx)
		if l == nil {
			return nil, err // not a typed nil in an interface
		}
		return l, err
	})
	return f.(*lease.Future), run
}

// unavailable reports whether a Redis error reply says the server cannot run
// the command now and will soon: a slot being migrated whose keys are split
// across nodes, or one of Redisson's keys (a channel, a latch: never
// written) not yet moved (TRYAGAIN); a cluster between a primary's failure
// and its replica's promotion (CLUSTERDOWN); a server loading its data
// (LOADING); a replica that lost its primary (MASTERDOWN); a former primary,
// now a replica, reached before the client learnt of the failover
// (READONLY). The command did not run.
func unavailable(msg string) bool {
	for _, p := range []string{"TRYAGAIN", "CLUSTERDOWN", "LOADING", "MASTERDOWN", "READONLY"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
