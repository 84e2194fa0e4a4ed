package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leasehold/leasehold/internal/leasestate"
)

// Lease is one acquisition of a lock, held until Release or until lost:
// then Lost is closed, Context cancelled and Err says why. Safe for
// concurrent use; only the locks make Leases (a Lease{} of one's own holds
// nothing: it reads as lost).
type Lease struct {
	// s is the lease's state, and the Lease's only field: the locks make
	// an leasestate.Lease and hand it out as a *Lease (internal/leasestate).
	s leasestate.Lease
}

// errReleased is the cause of a Lease's context after Release.
var errReleased = fmt.Errorf("%w: released", ErrNotHeld)

// state is the Lease's state.
func (l *Lease) state() *leasestate.Lease { return &l.s }

// hold is the lease's hold: none for a Lease no lock made.
func (l *Lease) hold() leasestate.Hold {
	if h := l.s.Hold(); h != nil {
		return h
	}
	return noHold{}
}

// Name is the lock name.
func (l *Lease) Name() string { return l.hold().Name() }

// Owner is the lease's owner field in Redis, CLIENT_ID:LEASE_ID, shared by
// its reentrant leases.
func (l *Lease) Owner() string { return l.hold().Owner() }

// Token is the fencing token, above every earlier acquisition's of this
// lock name (by owners that draw one): the guarded resource refuses lower
// ones. 0 for a semaphore's permits.
func (l *Lease) Token() uint64 { return l.state().Token() }

// Context carries the acquiring ctx's values and this lease, for
// reentrancy. It is cancelled when the lease is lost or released, not when
// the acquiring ctx ends.
func (l *Lease) Context() context.Context {
	if l.s.Hold() == nil {
		return noHoldContext
	}
	return l.state().Context(errReleased)
}

// Lost is closed when the lease is lost: the lock was found gone, no renewal
// was confirmed in time, or the Client closed. It stays open after a clean
// Release.
func (l *Lease) Lost() <-chan struct{} { return l.hold().Lost() }

// Err is nil while the lease is held and after a clean Release; once lost,
// an *Error wrapping ErrLost or ErrClosed.
func (l *Lease) Err() error { return l.hold().Err() }

// Deadline is when the lease is lost unless a renewal is confirmed first;
// zero for one made of other leases, as quorum's.
func (l *Lease) Deadline() time.Time { return l.hold().Deadline() }

// HoldCount is how many leases of this owner on this lock are unreleased:
// 1 plus its reentrant leases still held.
func (l *Lease) HoldCount() int { return l.hold().Leases() }

// Release gives up this lease, even under an ended ctx, and is applied
// once. Its error wraps ErrNotHeld if the lease was released or lost; one
// Redis refuses (ErrRedis) leaves the lock to run out within its lease;
// when Redis cannot be reached the lease is still held: call Release
// again, or Close.
func (l *Lease) Release(ctx context.Context) error {
	if l.s.Hold() == nil {
		return errNoHold
	}
	s := l.state()
	if !s.MarkReleased() {
		return &Error{Op: "release", Name: l.Name(), Err: fmt.Errorf("%w: released already", ErrNotHeld)}
	}
	err := s.Release(ctx)
	if err != nil && !errors.Is(err, ErrNotHeld) {
		// Redis did not confirm: the lease is still held, and releasable.
		s.UnmarkReleased()
		return err
	}
	s.Cancel(errReleased)
	return err
}

// errNoHold is the error of a Lease no lock made.
var errNoHold = &Error{Op: "hold", Err: fmt.Errorf("%w: not a lease a lock made", ErrNotHeld)}

// noHoldContext is the context of a Lease no lock made: cancelled.
var noHoldContext = func() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errNoHold)
	return ctx
}()

// noHold is the hold of a Lease no lock made: none, as if lost.
type noHold struct{}

func (noHold) Name() string                                     { return "" }
func (noHold) Owner() string                                    { return "" }
func (noHold) Lost() <-chan struct{}                            { return noHoldContext.Done() }
func (noHold) Err() error                                       { return errNoHold }
func (noHold) Deadline() time.Time                              { return time.Time{} }
func (noHold) Leases() int                                      { return 0 }
func (noHold) Context(context.Context) context.Context          { return noHoldContext }
func (noHold) Release(context.Context, uint64, time.Time) error { return errNoHold }
func (noHold) Abandon(error)                                    {}
