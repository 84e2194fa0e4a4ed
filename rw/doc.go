// Package rw provides a reentrant read-write lock on Redis: many readers or
// one writer, laid out as Redisson's RReadWriteLock so that Go and Java
// services exclude and wake each other on one name.
//
//	rl, err := rw.New(c, "catalog").Read().Acquire(ctx)
//	if err != nil { return err }
//	defer rl.Release(context.Background())
//
// Read() and Write() are lease.Lockers with rlock's Lease: a watchdog or fixed
// lease, Lost, Context, a fencing Token. Each read hold has its own TTL, so a
// reader that dies leaves while the others keep the lock. Reads and writes
// re-enter each their own kind through the lease's context. A read under a
// write lease is admitted (a downgrade); a write under a read lease fails at
// once with ErrUpgrade, since two readers upgrading would wait for each other
// for ever. Any other write waits for every reader, the caller's own included.
//
// No one is preferred by default, as in Redisson: overlapping readers can keep
// a writer out for ever. leasehold.WithWriterPreference holds new readers back
// while a writer waits.
//
// Layout, wake-ups and writer preference in full:
// https://github.com/leasehold/leasehold/blob/main/docs/rw.md
package rw
