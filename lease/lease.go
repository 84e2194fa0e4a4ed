package lease

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// Lease is one acquisition of a lock. It is held until Release, or until it
// is lost: then Lost is closed, Context is cancelled and Err says why.
// Its methods are safe for concurrent use.
type Lease struct {
	hold     *Hold
	token    uint64
	parent   context.Context // the acquiring context: its values, not its cancellation
	released atomic.Bool
	since    time.Time       // when acquired; set only for an observed hold
	ctx      context.Context // made on first use, under hold.mu
	cancel   context.CancelCauseFunc
}

// Name is the lock name.
func (l *Lease) Name() string { return l.hold.cfg.Name }

// Owner is the owner field the lease holds the lock under in Redis,
// CLIENT_ID:LEASE_ID; reentrant leases share their first lease's owner.
func (l *Lease) Owner() string { return l.hold.cfg.Owner }

// Token is the fencing token of this acquisition: strictly greater than the
// token of every earlier acquisition of the same lock name, by any owner.
// Hand it to the guarded resource, which refuses writes carrying a token lower
// than one it has seen.
func (l *Lease) Token() uint64 { return l.token }

// Context carries the values of the context the lease was acquired with, and
// this lease for reentrancy. It is cancelled when the lease is lost or
// released, not when the acquiring context ends; context.Cause tells which.
func (l *Lease) Context() context.Context {
	h := l.hold
	h.mu.Lock()
	defer h.mu.Unlock()
	if l.ctx == nil {
		l.ctx, l.cancel = context.WithCancelCause(&leaseContext{Context: h.context(), lease: l})
		if l.released.Load() {
			l.cancel(errReleased)
		}
	}
	return l.ctx
}

// Lost is closed when the lease is lost: renewal found another owner, no
// renewal was confirmed before the lease ran out, or the Client closed. The
// channel stays open after a clean Release. Reentrant leases share their
// first lease's Lost.
func (l *Lease) Lost() <-chan struct{} { return l.hold.Lost() }

// Err is nil while the lease is held, and after a clean Release. Once the
// lease is lost it wraps ErrLost or ErrClosed with the reason.
func (l *Lease) Err() error { return l.hold.Err() }

// Deadline is when the lease is lost unless a renewal is confirmed first:
// the last confirmed renewal (or the acquisition) plus the lease time, less a
// margin for clock drift. A watchdog lease's deadline moves forward with each
// renewal; a fixed lease's does not. Zero for a lease with no deadline of its
// own (one made of other leases, as quorum's).
func (l *Lease) Deadline() time.Time { return l.hold.Deadline() }

// HoldCount is how many leases of this owner on this lock are not yet
// released: 1 plus its reentrant leases still held.
func (l *Lease) HoldCount() int { return l.hold.Leases() }

// Release gives up this lease: the lock is free once every lease of the
// owner is released. A release whose reply is lost is retried under the same
// request id, so it is applied once. It returns an error wrapping ErrNotHeld
// when the lease was released already or lost; Context is cancelled either way.
func (l *Lease) Release(ctx context.Context) error {
	if !l.released.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: %s: released already", ErrNotHeld, l.Name())
	}
	defer func() {
		l.hold.mu.Lock()
		if l.cancel != nil {
			l.cancel(errReleased)
		}
		l.hold.mu.Unlock()
	}()
	err := l.hold.release(ctx)
	l.hold.observe(Event{Kind: Released, Token: l.token, Held: time.Since(l.since), Err: err})
	return err
}
