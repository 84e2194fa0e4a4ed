package rlock

import (
	"context"
	"fmt"
	"math"

	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/script"
)

// RaiseToken raises the lock's fencing counter, redisson_lock_token:{NAME},
// to at least floor and returns the counter's value after; it never lowers
// it. Every later acquisition of the lock on this Redis then draws a token
// above floor. quorum.RedLock calls it to write the token it chose back to a
// majority of nodes, so that tokens rise across holders although each node
// counts on its own (see package quorum). floor must be below 2^63, the range
// of the counter.
func (l *Lock) RaiseToken(ctx context.Context, floor uint64) (uint64, error) {
	rc, err := l.e.Redis()
	if err != nil {
		return 0, err
	}
	if floor > math.MaxInt64 {
		return 0, fmt.Errorf("%w: token floor %d above 2^63-1 (lock %q)", lease.ErrInvalid, floor, l.e.Name)
	}
	return script.RaiseToken(ctx, rc, l.e.Name, floor)
}
