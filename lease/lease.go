package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leasehold/leasehold/internal/access"
)

// Lease is one acquisition of a lock. It is held until Release, or until it
// is lost: then Lost is closed, Context is cancelled and Err says why.
// Its methods are safe for concurrent use. Only the locks make Leases; its
// state is kept in a package of theirs.
type Lease access.Lease

// errReleased is the cause of a Lease's context after Release.
var errReleased = fmt.Errorf("%w: released", ErrNotHeld)

// state is the Lease's state.
func (l *Lease) state() *access.Lease { return (*access.Lease)(l) }

// Name is the lock name.
func (l *Lease) Name() string { return l.state().Hold().Name() }

// Owner is the owner field the lease holds the lock under in Redis,
// CLIENT_ID:LEASE_ID; reentrant leases share their first lease's owner.
func (l *Lease) Owner() string { return l.state().Hold().Owner() }

// Token is the fencing token of this acquisition: greater than the token of
// every earlier acquisition of the same lock name by an owner that draws
// tokens (every leasehold lock does; Redisson's RLock does not). Hand it to
// the guarded resource, which refuses writes carrying a token lower than one
// it has seen. A semaphore's permits have token 0.
func (l *Lease) Token() uint64 { return l.state().Token() }

// Context carries the values of the context the lease was acquired with, and
// this lease for reentrancy. It is cancelled when the lease is lost or
// released, not when the acquiring context ends; context.Cause tells which.
func (l *Lease) Context() context.Context { return l.state().Context(errReleased) }

// Lost is closed when the lease is lost: renewal found another owner, no
// renewal was confirmed before the lease ran out, or the Client closed. The
// channel stays open after a clean Release. Reentrant leases share their
// first lease's Lost.
func (l *Lease) Lost() <-chan struct{} { return l.state().Hold().Lost() }

// Err is nil while the lease is held, and after a clean Release. Once the
// lease is lost it is an *Error wrapping ErrLost or ErrClosed, with the reason.
func (l *Lease) Err() error { return l.state().Hold().Err() }

// Deadline is when the lease is lost unless a renewal is confirmed first:
// the last confirmed renewal (or the acquisition) plus the lease time, less a
// margin for clock drift. A watchdog lease's deadline moves forward with each
// renewal; a fixed lease's does not. Zero for a lease with no deadline of its
// own (one made of other leases, as quorum's).
func (l *Lease) Deadline() time.Time { return l.state().Hold().Deadline() }

// HoldCount is how many leases of this owner on this lock are not yet
// released: 1 plus its reentrant leases still held.
func (l *Lease) HoldCount() int { return l.state().Hold().Leases() }

// Release gives up this lease: the lock is free once every lease of the
// owner is released. It is sent even when ctx is already cancelled or past
// its deadline (detached from ctx's cancellation, bounded by a few seconds of
// its own), and a release whose reply is lost is retried under the same
// request id, so it is applied once. It returns an *Error wrapping ErrNotHeld
// when the lease was released already or lost (at once, also when the loss
// comes while the release waits for Redis); Context is cancelled either
// way. When Redis cannot be reached in that time, the lease stays held (and
// renewed): the *Error says so, and Release may be called again; Close
// releases it too.
func (l *Lease) Release(ctx context.Context) error {
	s := l.state()
	if !s.Claim() {
		return &Error{Op: "release", Name: l.Name(), Err: fmt.Errorf("%w: released already", ErrNotHeld)}
	}
	err := s.Release(ctx)
	if err != nil && !errors.Is(err, ErrNotHeld) {
		// Redis did not confirm: the lease is still held, and releasable.
		s.Unclaim()
		return err
	}
	s.Cancel(errReleased)
	return err
}
