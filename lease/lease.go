package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leasehold/leasehold/internal/access"
)

// Lease is one acquisition of a lock, held until Release or until lost:
// then Lost is closed, Context cancelled and Err says why. Safe for
// concurrent use; only the locks make Leases.
type Lease access.Lease

// errReleased is the cause of a Lease's context after Release.
var errReleased = fmt.Errorf("%w: released", ErrNotHeld)

// state is the Lease's state.
func (l *Lease) state() *access.Lease { return (*access.Lease)(l) }

// Name is the lock name.
func (l *Lease) Name() string { return l.state().Hold().Name() }

// Owner is the lease's owner field in Redis, CLIENT_ID:LEASE_ID, shared by
// its reentrant leases.
func (l *Lease) Owner() string { return l.state().Hold().Owner() }

// Token is the fencing token, above every earlier acquisition's of this
// lock name (by owners that draw one): the guarded resource refuses lower
// ones. 0 for a semaphore's permits.
func (l *Lease) Token() uint64 { return l.state().Token() }

// Context carries the acquiring ctx's values and this lease, for
// reentrancy. It is cancelled when the lease is lost or released, not when
// the acquiring ctx ends.
func (l *Lease) Context() context.Context { return l.state().Context(errReleased) }

// Lost is closed when the lease is lost: the lock was found gone, no renewal
// was confirmed in time, or the Client closed. It stays open after a clean
// Release.
func (l *Lease) Lost() <-chan struct{} { return l.state().Hold().Lost() }

// Err is nil while the lease is held and after a clean Release; once lost,
// an *Error wrapping ErrLost or ErrClosed.
func (l *Lease) Err() error { return l.state().Hold().Err() }

// Deadline is when the lease is lost unless a renewal is confirmed first;
// zero for one made of other leases, as quorum's.
func (l *Lease) Deadline() time.Time { return l.state().Hold().Deadline() }

// HoldCount is how many leases of this owner on this lock are unreleased:
// 1 plus its reentrant leases still held.
func (l *Lease) HoldCount() int { return l.state().Hold().Leases() }

// Release gives up this lease, even under an ended ctx, and is applied
// once. Its error wraps ErrNotHeld if the lease was released or lost (at
// once, also when the loss comes while the release waits); on any other
// error the lease is still held: call Release again, or Close.
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
