// Package lease is what every leasehold lock hands its holder: a Lease with a
// lifetime, the Locker interface the locks implement, the Future of an
// asynchronous attempt, the errors, and the Observer of every lease's life.
//
//	l, err := locker.Acquire(ctx)
//	if err != nil { return err }
//	defer l.Release(context.Background())
//	select {
//	case <-l.Lost(): // renewal failed, the lease expired, or the Client closed
//		return l.Err()
//	case res := <-work(l.Context()): // l.Context() is cancelled on loss
//		...
//	}
//
// Do (TryDo, to make one attempt) does all of that in one call, and gives the
// lock back when fn returns or panics:
//
//	err := lease.Do(ctx, locker, func(ctx context.Context) error { return work(ctx) })
//
// A failed acquisition holds nothing. Reentrancy flows through the context:
// Acquire(l.Context()) on the same lock name, through the same Client, returns
// at once with the hold count raised; the lock is free when the last such
// Lease is released.
//
// The contract in full: https://github.com/leasehold/leasehold/blob/main/docs/lease.md
package lease
