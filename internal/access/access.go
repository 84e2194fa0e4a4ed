// Package access lets leasehold's own packages build the values of package
// lease whose fields users cannot set: a Lease on a hold, and a Future.
// Package lease fills in its variables when it is initialised; every package
// that uses them imports lease, so they are set before first use.
package access

import (
	"context"
	"time"
)

// Hold is what a Lease needs of its owner's claim on a lock. The keeper's
// hold (internal/core) implements it.
type Hold interface {
	// Name is the lock name; Owner the owner field in Redis.
	Name() string
	Owner() string
	// Lost is closed when the hold is lost; Err says why.
	Lost() <-chan struct{}
	Err() error
	// Deadline is when the hold is lost unless a renewal is confirmed.
	Deadline() time.Time
	// Leases is how many leases on the hold are not yet released.
	Leases() int
	// Context returns a context that carries the values of parent and the
	// hold itself (for reentrancy), and is cancelled when the hold ends.
	Context(parent context.Context) context.Context
	// Release gives up one lease's share of the hold; token and since are
	// the lease's, for the observer.
	Release(ctx context.Context, token uint64, since time.Time) error
}

var (
	// NewLease returns a *lease.Lease on h, acquired under parent.
	NewLease func(h Hold, parent context.Context, token uint64, since time.Time) any
	// NewFuture returns a *lease.Future for acquire, which returns a
	// *lease.Lease, and the function that runs the attempt.
	NewFuture func(ctx context.Context, acquire func(context.Context) (any, error)) (future any, run func())
)
