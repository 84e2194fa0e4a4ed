// Package rlock provides a reentrant lock on Redis, laid out as Redisson's
// RLock so that Go and Java services exclude and wake each other on one name.
//
//	l, err := rlock.New(c, "orders").Acquire(ctx)
//	if err != nil { return err }
//	defer l.Release(context.Background())
//
// The Lease is renewed by the Client's watchdog while its holder lives (or is
// fixed, with leasehold.WithLeaseTime), and its Token rises with every
// acquisition of the name. A failed Acquire holds nothing and writes nothing.
// Reentrancy flows through the context: Acquire(l.Context()) on the same name
// through the same Client raises the hold count and returns at once. Waiters
// do not poll: a release or an expiry wakes them.
//
// The layout in Redis, wake-ups and tokens:
// https://github.com/leasehold/leasehold/blob/main/docs/rlock.md
package rlock
