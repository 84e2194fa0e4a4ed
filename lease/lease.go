package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/internal/access"
)

// Lease is one acquisition of a lock. It is held until Release, or until it
// is lost: then Lost is closed, Context is cancelled and Err says why.
// Its methods are safe for concurrent use.
type Lease struct {
	hold     access.Hold
	token    uint64
	parent   context.Context // the acquiring context: its values, not its cancellation
	since    time.Time       // when acquired; set only for an observed hold
	released atomic.Bool

	mu     sync.Mutex
	ctx    context.Context // made on first use
	cancel context.CancelCauseFunc
}

// errReleased is the cause of a Lease's context after Release.
var errReleased = fmt.Errorf("%w: released", ErrNotHeld)

func init() {
	access.NewLease = func(h access.Hold, parent context.Context, token uint64, since time.Time) any {
		return &Lease{hold: h, token: token, parent: parent, since: since}
	}
}

// Name is the lock name.
func (l *Lease) Name() string { return l.hold.Name() }

// Owner is the owner field the lease holds the lock under in Redis,
// CLIENT_ID:LEASE_ID; reentrant leases share their first lease's owner.
func (l *Lease) Owner() string { return l.hold.Owner() }

// Token is the fencing token of this acquisition: greater than the token of
// every earlier acquisition of the same lock name by an owner that draws
// tokens (every leasehold lock does; Redisson's RLock does not). Hand it to
// the guarded resource, which refuses writes carrying a token lower than one
// it has seen. A semaphore's permits have token 0.
func (l *Lease) Token() uint64 { return l.token }

// Context carries the values of the context the lease was acquired with, and
// this lease for reentrancy. It is cancelled when the lease is lost or
// released, not when the acquiring context ends; context.Cause tells which.
func (l *Lease) Context() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx == nil {
		l.ctx, l.cancel = context.WithCancelCause(l.hold.Context(l.parent))
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
// lease is lost it is an *Error wrapping ErrLost or ErrClosed, with the reason.
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
// owner is released. It is sent even when ctx is already cancelled or past
// its deadline (detached from ctx's cancellation, bounded by a few seconds of
// its own), and a release whose reply is lost is retried under the same
// request id, so it is applied once. It returns an *Error wrapping ErrNotHeld
// when the lease was released already or lost; Context is cancelled either
// way. When Redis cannot be reached in that time, the lease stays held (and
// renewed): the *Error says so, and Release may be called again; Close
// releases it too.
func (l *Lease) Release(ctx context.Context) error {
	if !l.released.CompareAndSwap(false, true) {
		return &Error{Op: "release", Name: l.Name(), Err: fmt.Errorf("%w: released already", ErrNotHeld)}
	}
	err := l.hold.Release(ctx, l.token, l.since)
	if err != nil && !errors.Is(err, ErrNotHeld) {
		// Redis did not confirm: the lease is still held, and releasable.
		l.released.Store(false)
		return err
	}
	l.mu.Lock()
	if l.cancel != nil {
		l.cancel(errReleased)
	}
	l.mu.Unlock()
	return err
}
