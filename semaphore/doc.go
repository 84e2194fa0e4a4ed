// Package semaphore provides a leased counting semaphore on Redis: at most N
// holders at a time across every process (N crawlers per site, N exports at
// once, N connections to a partner's API), laid out as Redisson's
// RPermitExpirableSemaphore, so that a Java service using Redisson and a Go
// service using leasehold share one semaphore.
//
//	s := semaphore.New(c, "partner-api")
//	s.TrySetPermits(ctx, 8)        // once: the total, if it was never set
//	l, err := s.Acquire(ctx)       // waits for one of the 8 permits
//	if err != nil { return err }
//	defer l.Release(context.Background())
//
// Weighted(n) hands out leases of n permits, taken and given back together,
// as golang.org/x/sync/semaphore's Weighted does within one process.
//
// # Permits are leases
//
// Each lease is a lease like any lock's: the watchdog renews it while its
// holder lives (leasehold.WithLeaseTime gives a fixed lease instead), Lost
// closes and Context is cancelled when it is lost, and Release gives its
// permits back. When a holder dies its permits come back once their lease
// has run out, with no operator: the next attempt to take permits, by
// anyone (Redisson's included), gives every expired permit back first.
//
// A semaphore is not reentrant: Acquire under a lease's context of the same
// semaphore takes another permit. Token is always 0: several holders hold at
// once by design, so no order of tokens could tell a stale holder from a
// live one, and a resource cannot fence with them. What keeps the bound is
// that Redis never lets more than N unexpired permits be held at once, and
// that a holder learns of its loss (Lost, Context) before its permit can
// expire in Redis. A holder paused for longer than its lease (a GC pause, a
// stopped process) can still act after its permit went to another: only a
// resource that counts its users itself could refuse it.
//
// # In Redis
//
// NAME is a string holding the permits available; {NAME}:timeout a sorted
// set of the permits taken, each id scored by its expiry (epoch ms);
// redisson_sc:{NAME} the channel on which every change that frees permits
// publishes the permits then available, which Redisson reads as the number
// of waiters to wake. A permit id is 16 bytes, as Redisson's: leasehold's
// hold the Client and lease they belong to (see package script). Permits
// Java takes without a lease time never expire.
//
// Expiry times come from the Redis server's clock (TIME), never from the
// client's. Redisson's scripts take theirs from the Java client's clock: a
// Java client whose clock is ahead of the server's by s gives back
// leasehold's permits (and any others) s early, and one more than a
// lease's two thirds ahead can give back a permit whose holder still renews
// it, letting more than N hold at once; one behind by s gives its own
// permits a lease s shorter than it asked for, and gives expired permits
// back s late. Keep the clocks of Java clients synchronised with the
// server's, far closer than a lease.
//
// # Waiting and order
//
// A waiter does not poll: it sleeps until a message on redisson_sc:{NAME},
// an invalidation of NAME, the earliest expiry of a permit held (as the
// failed attempt reported it), or the end of its ctx, whichever comes first.
// Each Client keeps one subscription per semaphore however many wait, and a
// message wakes as many of its waiters as the permits it announces serve,
// the heaviest first, not all of them.
//
// Larger requests go first. A waiter for n > 1 permits that cannot have
// them leaves a claim (leasehold_semaphore_claims:{NAME}), and an attempt for
// m permits succeeds only if the permits left after it still cover the
// claims of every other waiter for more than m. So a stream of single-permit
// takers cannot starve a waiter for many: once its claim stands, permits
// given back accumulate for it. Among requests of one size there is no
// order, as among the waiters of a lock; a waiter can be passed by a steady
// stream of larger ones. A claim lasts until its waiter's next attempt is
// due, plus 5s: a waiter whose process died holds smaller takers back that
// long at most, and one that stops waiting withdraws its claim at once.
// Redisson's takers know nothing of claims and do not stand back.
//
// # Bad input
//
// A weight below 1 or above 65536, a weight above the semaphore's total
// (available plus held) when an attempt is made, a TrySetPermits that is
// negative or above 2^53-1, an AddPermits that would leave more than
// that either way: a *lease.Error wrapping lease.ErrInvalid. A name
// holding a key of another type, or a count that is not an integer (or is
// beyond 2^53-1): a *lease.Error wrapping lease.ErrRedis. Either way nothing is changed in Redis. A semaphore whose
// permits were never set, or whose total is 0 (set so, or all taken away),
// is shut, not an error: Acquire waits until permits are added.
package semaphore
