// Package rw provides a reentrant read-write lock on Redis: many readers or
// one writer, laid out as Redisson's RReadWriteLock so that a Java service
// using Redisson and a Go service using leasehold exclude and wake each other
// on the same lock name.
//
//	rl, err := rw.New(c, "catalog").Read().Acquire(ctx)
//	if err != nil { return err }
//	defer rl.Release(context.Background())
//
// Read() and Write() are lease.Lockers with rlock's Lease: a watchdog lease
// renewed by the Client's keeper (or a fixed one, leasehold.WithLeaseTime),
// Lost, Context, a fencing Token drawn from the same counter as rlock's
// (redisson_lock_token:{NAME}), reentrancy through the lease's context.
//
// # Layout in Redis
//
// NAME is a hash: field mode is "read" or "write"; a reader's field OWNER
// holds its read hold count; the writer's field is OWNER:write. Each read hold
// N of OWNER is also a key {NAME}:OWNER:rwlock_timeout:N with that hold's own
// TTL, and NAME's TTL is kept at the longest live hold's. So a reader that
// dies leaves when its own holds run out while the other readers keep the
// lock: the watchdog renews every hold key of its owner, not just the hash,
// and a release by another reader sets the hash's TTL to the longest hold
// still alive (deleting the lock when there is none).
//
// # Wake-ups
//
// Releases publish on redisson_rwlock:{NAME}, as Redisson does: "1" when a
// write hold ends, which wakes every waiter (all the waiting readers can
// enter), and "0" when a read release frees the lock, which wakes one waiter
// (readers do not wait on readers, so it is a writer). Waiters also wake on
// the invalidation of NAME (which reports its expiry too) and on the
// holder's remaining TTL; nobody polls.
//
// # Reentrancy, downgrade, upgrade
//
// Read and write are separate scopes. Acquire(l.Context()) of the same kind,
// same name and same Client re-enters. A read asked for under a write lease's
// context is admitted while the write lease holds (a downgrade: take the
// write lock, take the read lock, release the write lock, still reading);
// it is a read hold of its own, under an owner of its own, so it is released
// on its own. Asking for the write lock under a read lease's context (an
// upgrade) fails at once with ErrUpgrade, whether or not other readers hold:
// two readers upgrading would each wait for the other for ever. A write
// asked for under any other context just waits like every writer, for every
// reader to leave, the caller's own included: give such calls a deadline.
//
// # Fairness
//
// By default no one is preferred, as in Redisson: a writer waits until no
// reader holds, and readers that keep overlapping can keep it out for ever.
// With leasehold.WithWriterPreference a writer that has to wait announces
// itself (in leasehold_rwlock_writers:{NAME}, a sorted set Redisson never
// reads), and new leasehold readers stand back until it has had its turn;
// readers that already hold are still admitted again through their lease's
// context, so nested reads cannot deadlock with the writer. When the last
// reader leaves while writers wait, every waiter is woken, so that the
// writer is not passed over for a reader that may not enter. The limits: a
// stream of preferring writers can in turn keep readers out; Redisson
// readers on the same lock do not stand back; and a writer whose process
// dies holds new readers back until its announcement expires, at most the
// wait until its next attempt (the holder's TTL) plus 5s. A writer that gives
// up waiting (its ctx ends) withdraws its announcement and wakes the readers.
package rw
