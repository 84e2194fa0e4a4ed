// Package leasestate is the state behind package lease's Lease and Future,
// in a package below both lease and the engine, so that the engine can build
// them without hooks: lease declares
//
//	type Lease struct{ s leasestate.Lease }
//	type Future struct{ s leasestate.Future[*Lease] }
//
// and gives them their methods, and the engine hands out what it builds here
// as the public value, through a pointer to its one field (core.AsLease).
// Users cannot name this package, so they can neither build a working Lease
// nor reach its fields.
package leasestate

import (
	"context"
	"sync"
	"sync/atomic"
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
	// Abandon stops keeping the hold, whose release Redis would not
	// confirm: lost with cause, it is no longer renewed and runs out.
	Abandon(cause error)
}

// Lease is one acquisition on a hold.
type Lease struct {
	hold     Hold
	token    uint64
	parent   context.Context // the acquiring context: its values, not its cancellation
	since    time.Time       // when acquired; set only for an observed hold
	released atomic.Bool

	mu     sync.Mutex
	ctx    context.Context // made on first use
	cancel context.CancelCauseFunc
}

// NewLease returns a Lease on h, acquired under parent.
func NewLease(h Hold, parent context.Context, token uint64, since time.Time) *Lease {
	return &Lease{hold: h, token: token, parent: parent, since: since}
}

// Hold is the lease's hold.
func (l *Lease) Hold() Hold { return l.hold }

// Token is the lease's fencing token.
func (l *Lease) Token() uint64 { return l.token }

// Context is the lease's context, made on first use: the hold's, with the
// values of the acquiring context, cancelled by Cancel too (with released
// as the cause when the lease was released before the context was made).
func (l *Lease) Context(released error) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx == nil {
		l.ctx, l.cancel = context.WithCancelCause(l.hold.Context(l.parent))
		if l.released.Load() {
			l.cancel(released)
		}
	}
	return l.ctx
}

// MarkReleased marks the lease released and reports whether it was held
// until then: of two Releases at once, one marks it.
func (l *Lease) MarkReleased() bool { return l.released.CompareAndSwap(false, true) }

// UnmarkReleased undoes MarkReleased after a release Redis did not confirm.
func (l *Lease) UnmarkReleased() { l.released.Store(false) }

// Release gives up the lease's share of its hold (see Hold.Release).
func (l *Lease) Release(ctx context.Context) error { return l.hold.Release(ctx, l.token, l.since) }

// Cancel cancels the lease's context with cause, if it was made; one made
// later is cancelled as it is made (see Context).
func (l *Lease) Cancel(cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		l.cancel(cause)
	}
}
