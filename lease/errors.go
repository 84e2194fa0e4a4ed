package lease

import "errors"

// Sentinel errors. The errors leasehold returns wrap them with detail (the lock
// name first); test for them with errors.Is.
var (
	// ErrNotAcquired is returned by TryAcquire when another owner holds the lock.
	ErrNotAcquired = errors.New("lease: not acquired")
	// ErrNotHeld is returned by Release when the lease is no longer held: it
	// was released already, or lost.
	ErrNotHeld = errors.New("lease: not held")
	// ErrLost is what Err reports once a lease is lost: renewal found another
	// owner, or no renewal was confirmed before the lease ran out.
	ErrLost = errors.New("lease: lost")
	// ErrClosed is returned by calls on a closed Client, and is what Err reports
	// for the leases that Client still held when it closed.
	ErrClosed = errors.New("lease: client closed")
	// ErrInvalid reports bad input: an empty name, a zero or negative
	// duration, a nil client.
	ErrInvalid = errors.New("lease: invalid argument")
)
