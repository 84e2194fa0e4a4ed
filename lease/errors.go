package lease

import (
	"errors"
	"strconv"
)

// Sentinel errors. A failed operation on a lock returns an *Error wrapping
// one of them, ctx's error or a Redis reply: test with errors.Is.
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
	// duration, a nil client, an option the Redis deployment cannot honour.
	ErrInvalid = errors.New("lease: invalid argument")
	// ErrNotReplicated is wrapped, with ErrNotAcquired, by the error of an
	// acquisition that fewer replicas acknowledged than WithReplicas asks for.
	ErrNotReplicated = errors.New("lease: not acknowledged by enough replicas")
	// ErrRedis is wrapped by the error of an operation that Redis refused
	// with an error reply (a key of the wrong type under the lock's name, a
	// script error); the reply itself is wrapped too.
	ErrRedis = errors.New("lease: redis error")
)

// Error records a failed operation on a lock, as os.PathError does on a
// file: every lock kind's failures, and a lost lease's Err, are *Errors.
type Error struct {
	// Op is the operation: "acquire", "try-acquire", "release", "hold" (the
	// lease was lost while held), "inspect", "force-release", ...
	Op string
	// Name is the lock name.
	Name string
	// Err wraps a sentinel of this package, ctx's error, or a Redis error,
	// with detail.
	Err error
}

// Error reads "OP "NAME": ERR".
func (e *Error) Error() string { return e.Op + " " + strconv.Quote(e.Name) + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }
