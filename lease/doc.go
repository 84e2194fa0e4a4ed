// Package lease is what every leasehold lock hands its holder: a Lease with a
// lifetime, the Locker interface the locks implement, the Future of an
// asynchronous attempt, the errors (sentinels, and the *Error that carries
// them with the operation and the lock name), and the Observer that hears of
// every lease's life.
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
// Do (TryDo, to make one attempt) does all of that in one call: it takes the
// lock, runs fn with a ctx that ends when the lease is lost or ctx ends, and
// gives the lock back when fn returns or panics:
//
//	err := lease.Do(ctx, locker, func(ctx context.Context) error { return work(ctx) })
//
// Reentrancy flows through the context: Acquire(l.Context()) on the same lock
// name, through the same Client, returns at once with the hold count raised.
// Each such Lease is released on its own; the lock is free when the last one
// is.
package lease
