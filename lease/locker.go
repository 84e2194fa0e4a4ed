package lease

import "context"

// Locker is a lock that hands out Leases: rlock, fairqueue, rw, quorum and
// semaphore (its permits) implement it.
type Locker interface {
	// Acquire blocks until the lock is held or ctx is done; ctx's deadline is
	// the longest the caller will wait. On failure it returns an error
	// naming the lock (wrapping ctx.Err() when ctx ended) and holds nothing.
	Acquire(ctx context.Context) (*Lease, error)
	// TryAcquire makes one attempt and does not wait: it returns an error
	// wrapping ErrNotAcquired when another owner holds the lock.
	TryAcquire(ctx context.Context) (*Lease, error)
	// AcquireAsync starts Acquire and returns at once. Cancelling the Future
	// (or ctx) before its Lease is taken leaves nothing held.
	AcquireAsync(ctx context.Context) *Future
}
