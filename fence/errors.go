package fence

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/leasehold/leasehold/lease"
)

// ErrStale is wrapped by the error of a write that carries a token lower than
// one the resource has already applied: a newer holder has written.
var ErrStale = errors.New("fence: stale token")

// Error records a refused or failed fenced write, as os.PathError does for a
// file.
type Error struct {
	// Op is the operation: "create", "check", "set", "do", "admit".
	Op string
	// Resource is the resource: a Table row's resource (the table, for
	// "create"), a Redis key, a Gate's resource.
	Resource string
	// Err wraps ErrStale, lease.ErrInvalid, ctx's error or the store's.
	Err error
}

// Error reads "fence: OP "RESOURCE": ERR".
func (e *Error) Error() string {
	return "fence: " + e.Op + " " + strconv.Quote(e.Resource) + ": " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// stale is the refusal of token where last was applied.
func stale(op, resource string, token, last uint64) error {
	return &Error{Op: op, Resource: resource, Err: fmt.Errorf("%w %d: %d applied already", ErrStale, token, last)}
}

// invalid is a refusal of bad input.
func invalid(op, resource, why string) error {
	return &Error{Op: op, Resource: resource, Err: fmt.Errorf("%w: %s", lease.ErrInvalid, why)}
}

// checkToken refuses token 0 (a lease with no fencing token: a semaphore
// permit's) and tokens above math.MaxInt64, which no store here keeps as a
// signed 64-bit integer. leasehold's tokens are about the server's time in
// microseconds, far below that.
func checkToken(op, resource string, token uint64) error {
	switch {
	case token == 0:
		return invalid(op, resource, "token 0: the lease has no fencing token")
	case token > math.MaxInt64:
		return invalid(op, resource, "token "+strconv.FormatUint(token, 10)+" above 2^63-1")
	}
	return nil
}
