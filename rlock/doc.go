// Package rlock provides a reentrant lock on Redis, laid out as Redisson's
// RLock so that a Java service using Redisson and a Go service using
// leasehold exclude and wake each other on the same lock name.
//
//	l, err := rlock.New(c, "orders").Acquire(ctx)
//	if err != nil { return err }
//	defer l.Release(context.Background())
//
// In Redis the lock is a hash NAME with one field, the owner
// CLIENT_ID:LEASE_ID, holding the hold count, and a PEXPIRE of the lease. A
// full release deletes it and publishes "0" on redisson_lock__channel:{NAME};
// every acquisition
// draws its fencing token from redisson_lock_token:{NAME}: max(counter + 1,
// the server's clock in µs), PEXPIREd with the lease, so tokens rise across
// owners (Redisson's RFencedLock INCRs the same counter) and across a restart
// of a Redis without persistence.
//
// A waiter does not poll: it sleeps until an unlock message, an invalidation
// of NAME (which also reports its expiry), the holder's remaining lease as the
// failed attempt reported it, or the end of its ctx, whichever comes first.
//
// Reentrancy flows through the context: Acquire(lease.Context()) on the same
// name through the same Client raises the hold count and returns at once.
package rlock
