// Package handoff passes a lock from a release to a waiter of the same
// Client, and bounds how long one Client keeps a lock from everyone else.
//
// Its words, each with one meaning:
//
//   - A release *passes* the lock when one script gives the holder's hold up
//     and makes a waiter of the same Client the holder (lock_handoff): one
//     round trip, no message, no attempt by the waiter.
//   - A release *publishes* when it frees the lock and sends the unlock
//     message, for whoever waits to try.
//   - A *candidate* is a waiter of this Client standing in the lock's *line*:
//     a release may pick it and pass it the lock.
//   - A Client's *turn* on a lock begins when one of its goroutines takes the
//     lock by an attempt. Its releases pass the lock on without asking, at
//     most once to each candidate that stood in line when the turn began;
//     then a release *asks* whether anyone else wants the lock.
//   - Someone else *wants* the lock when another connection listens on its
//     channel (a waiter of another process, a Redisson client: PUBSUB NUMSUB)
//     or a waiter that does not listen left its *mark* (a poller, a
//     TryAcquire loop): leasehold_lock_wanted:{NAME}, whose TTL says when it
//     tries next (see Want).
//   - When someone does, the release publishes and the Client *yields*: its
//     candidates stand back for a window, long enough for a listener to
//     answer the message or for the marked waiter's next try, so that the
//     waiter elsewhere takes the lock. Else the release passes the lock and a
//     new turn begins.
//
// A waiter elsewhere thus waits at most one turn of each Client busy on the
// lock (as many handoffs as that Client had waiters, or after a yield as
// others took the lock meanwhile, up to 64), and processes share a contended
// lock in proportion to their waiters. docs/rlock.md states the bounds;
// docs/architecture.md draws the release path.
//
// The hub (internal/hub) wakes waiters; this package decides who holds next.
package handoff
