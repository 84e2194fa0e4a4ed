// Package quorum provides locks made of other locks: Multi holds all of N
// locks (Redisson's RedissonMultiLock) and RedLock holds a majority of N locks
// taken on independent Redis servers (Redisson's RedissonRedLock, the
// algorithm of redis.io's "Distributed Locks with Redis").
//
//	l, err := quorum.RedLock(rlock.New(c1, "orders"), rlock.New(c2, "orders"), rlock.New(c3, "orders")).Acquire(ctx)
//	if err != nil { return err }
//	defer l.Release(context.Background())
//
// Both return a lease.Locker whose Lease behaves like rlock's: Lost, Context,
// Err, Release, reentrancy through the context, a fencing token. The members
// are renewed by their own Clients' watchdogs (or run out, with
// leasehold.WithLeaseTime); the quorum Lease is lost when the members still
// held no longer make the quorum (every member for Multi, N/2+1 for RedLock),
// and the members it still holds are then released. Release gives up every
// member at once; a member whose node does not confirm within a few seconds
// has stopped renewing and runs out on its own.
//
// # Acquisition
//
// An attempt asks every member at once, each under Config.NodeTimeout. A
// member whose answer did not come in time counts as not held; its lock's own
// cleanup undoes what the request may have taken. The time spent is measured
// on the monotonic clock: each member lease's deadline is TTL after its
// request was sent, less the member's drift margin, and the quorum is valid
// until the N/2+1-th latest of them less the quorum's drift
// (Config.ClockDrift of the TTL plus Config.DriftMargin), that is TTL -
// elapsed - drift. An attempt that gets too few members, or whose validity is
// used up, releases every member it took and Acquire tries again after a
// random delay (Config.RetryDelay), until ctx ends. A Multi waits for the
// member that refused it, alone and holding nothing, so two Multis over the
// same locks in different orders cannot deadlock.
//
// # Fencing tokens
//
// A lock alone cannot protect a resource from a holder that was paused (a GC
// pause, a stopped VM, a slow network) past its lease: when it wakes it may
// still write, after another holder took the lock. Hand Token to the
// resource with every write and have it refuse a token lower than one it has
// seen: the paused holder's late write then carries an old token and is
// refused.
//
// Each node counts tokens on its own (redisson_lock_token:{NAME}: max(counter
// + 1, the node's clock in µs) on every acquisition), so the counters diverge
// and the maximum over one majority is not enough: nodes A=5, B=1 grant 6 to
// one holder, and a later holder on B and C=1 would get 2. So the quorum takes
// the highest token its members drew and, before the Lease is returned,
// writes it back to the members it holds (counter = max(counter, token),
// PEXPIREd with the lease);
// the attempt fails unless a quorum of them confirm. Every later quorum
// meets one of those nodes, draws a token above it there, and so hands out a
// higher token: tokens strictly increase across holders (a quorum
// max-register). A reentrant Lease draws the claim's token plus one, written
// back the same way. Multi writes back to every member, so a later holder of
// any one member alone also draws a higher token.
//
// A node that lost its counter (restarted empty, or the counter expired a
// lease after the last holder) draws from its clock: tokens still rise as
// long as the nodes' clocks agree to within the time between two holders,
// and no clock is stepped backwards. Members that draw no
// token of their own (Lockers from outside this module) are not written back: a Multi's token
// (the highest its members drew) still rises from one Multi holder to the
// next, since every member's counter does, but a RedLock's is not guaranteed
// to, and a reentrant Lease then shares its first Lease's token.
//
// # Safety limits
//
// RedLock's safety rests on timing assumptions that a real system can break:
//
//   - Clocks. Redis expires keys by its own clock and the holder times its
//     lease by its own monotonic clock; the drift margin covers rates that
//     differ a little, not a server clock that jumps (an operator or NTP
//     stepping it makes keys expire early). Run the nodes' clocks slewed,
//     never stepped.
//   - Process pauses. A holder paused longer than its remaining validity
//     wakes believing it holds a lock that expired; its Lost fires only once
//     it runs again. Only fencing tokens checked by the resource guard
//     against this.
//   - Restarts without persistence. A node that restarts empty forgets the
//     locks it granted, and a second holder can then win a majority while the
//     first still holds one. redis.io's advice: persist with fsync, or keep a
//     crashed node down for longer than the longest lease (delayed restart)
//     before it rejoins. Tokens do not depend on it (see above).
//
// Multi makes no timing claims beyond its members': it is as safe as the
// locks it holds.
package quorum
