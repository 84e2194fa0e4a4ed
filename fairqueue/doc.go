// Package fairqueue provides a fair reentrant lock on Redis: waiters get the
// lock in the order they asked for it, across every Client and process, so no
// waiter starves under contention.
//
//	l, err := fairqueue.New(c, "orders").Acquire(ctx)
//	if err != nil { return err }
//	defer l.Release(context.Background())
//
// The Lease is the one rlock hands out: a watchdog or fixed lease, Lost,
// Context, a fencing Token, reentrancy through the context.
//
// # Layout
//
// The lock is laid out as Redisson's RFairLock, so a Redisson client reads
// it: the hash NAME (owner -> hold count, with the lease as its PEXPIRE, as
// rlock), the list redisson_lock_queue:{NAME} of waiting owners, oldest
// first, and the sorted set redisson_lock_timeout:{NAME} of each waiter's
// deadline to keep its place, in milliseconds on the Redis server's clock.
// Every acquisition draws its fencing token from redisson_lock_token:{NAME},
// as rlock does: max(counter + 1, the server's clock in µs), so tokens rise
// even after the counter is gone (see "Fencing tokens" in docs/safety.md).
//
// # Fairness
//
// A waiter joins the tail of the queue at its first attempt. A free lock goes
// to the head of the queue and to nobody else: not to a newcomer, not to
// TryAcquire, even in the moment between a release and the head's attempt.
// That moment is exactly when a newcomer that is already running would win,
// and under contention there is always one, so letting it in would starve the
// waiters. For the same reason TryAcquire fails while anyone waits; it never
// joins the queue, since nobody would be there to keep or give up its place.
//
// A release tells the head alone, on its own channel
// redisson_lock__channel:{NAME}:OWNER (Redisson's per-thread channel): one
// wake-up per release, however many wait, where a shared channel would wake
// them all to find that one of them may go. For the same reason waiters do
// not listen to invalidations of NAME. A lease that runs out is noticed by
// the head's timer: a head that learns the holder's remaining lease is
// shorter than the refresh interval (a third of the queue timeout) sleeps no
// longer than that lease, and whoever becomes head while the lease is that
// short is told so, by the script that made it head or by the next round of
// its Client's keeper (below).
//
// # Timeouts
//
// A waiter's place is held by a deadline: the Redis server's time at its
// last attempt, or at its Client's last keeping of it, plus the queue
// timeout (leasehold.WithQueueTimeout, default 5s). A waiter sleeps until it
// is told to try; meanwhile its Client's keeper keeps its place, three times
// per queue timeout, in one script per lock for all of the Client's waiters
// on it (fair_keep: it pushes their deadlines on, removes dead waiters at the
// head and tells the head when the lock is free or about to run out), so a
// live waiter never loses its place while its Client can reach Redis. A
// waiter that stops asking, because its process died or its Client was
// closed, is removed once its deadline has passed, by whichever attempt,
// keeping round or release next finds it at the head. A waiter whose ctx
// ends removes itself at once, and tells the waiter after it if the lock is
// free: it may have been told so itself just before it gave up.
//
// Each deadline depends on nothing but its own waiter's last attempt, read
// from one clock. Redisson instead computes each waiter's deadline from the
// one ahead of it and adjusts them all as waiters come and go, and those sums
// drift hours into the future when waiters time out or die (Redisson issues
// 1104, 2099), while a waiter that outlives its fixed deadline is removed
// though alive and then waits for a message that never comes (3004). Here a
// deadline is never more than one queue timeout away, so any number of dead
// waiters at the head cost one queue timeout together, not one each. Taking
// the time from the server, not the client, means a client with a skewed
// clock cannot remove live waiters. Should a live waiter lose its place all
// the same (its Client could not reach Redis for a whole queue timeout), the
// next keeping round finds it gone and has it try again, which puts it at the
// tail: it never waits for a message meant for a place it no longer has.
//
// Only the head's deadline is checked, so each attempt costs O(1) whatever
// the length of the queue: a stale entry further back blocks nobody until it
// reaches the head, and is removed then.
//
// # Liveness
//
// Every script that frees the lock or changes the head tells the new head
// when it has to act, every keeping round tells the head when the lock is
// free or runs out before the next round, and a head's own timer covers a
// lease shorter than that. So a free lock with a queue always has a head
// that was told or whose timer fires, or a dead head that the next keeping
// round or attempt removes within a queue timeout: the queue cannot stand
// still with nobody holding the lock (Redisson issues 3730, 4167, 4478).
//
// The price is one short script per third of the queue timeout for each
// lock a Client has waiters on, whatever their number: with the default of
// 5s, a Client with 500 waiters on one lock costs Redis 0.6 scripts a second,
// all of a Client's locks due together sharing one round trip.
//
// # Working with Redisson
//
// A Redisson client on the same lock name excludes and wakes leasehold
// waiters, and is woken by them. Redisson writes deadlines from its own
// clock and, when it takes the lock, lowers every waiter's deadline by its
// thread-wait time; leasehold waiters that this puts in the past rejoin the
// queue at the tail on their next attempt, so fairness between the two is
// approximate while liveness holds.
//
// A hand-edited queue must keep the list and the sorted set together: delete
// both keys, never one, to clear it (live waiters then join again on their
// next attempt).
package fairqueue
