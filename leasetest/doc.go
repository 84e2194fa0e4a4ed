// Package leasetest is a test kit for code that takes leasehold locks: an
// in-process Redis (miniredis) for each test, and Clients on it, so that
// unit tests need no redis-server.
//
//	func TestRefresh(t *testing.T) {
//		c := leasetest.Open(t) // a Client on a Redis of this test's own
//		if err := refresh(t.Context(), rlock.New(c, "cache")); err != nil { ... }
//	}
//
// Several Clients on one Server stand for several processes, several
// Servers for the independent nodes of a quorum.RedLock. Every kind of lock
// works on it: waiters wake on the release, leases run out on the wall
// clock, fencing tokens rise. What differs from a real Redis
// (docs/testing.md has the whole list):
//
//   - It has no client-side caching, so a holder hears that its lock was
//     removed (a force release, a DEL) at its next renewal: the kit's
//     Clients renew every 0.5s (a 1.5s watchdog, unless WithWatchdog says
//     otherwise). A fixed lease (WithLeaseTime) is not renewed: its holder
//     hears of a removal when the lease runs out. A removal that publishes
//     nothing (a DEL, an expiry) wakes waiters when the holder's lease was
//     due to end, not at once.
//   - It is one server: no replicas (WithReplicas makes acquisitions fail
//     with lease.ErrNotReplicated), no Redis Cluster, Sentinel, ACL or
//     failover. Stats().MemoryPolicy is "".
//
// A kit Client's warnings go to the test's log unless WithObserver is
// given. The whole list of differences, integration tests against a real
// Redis and faults to inject:
// https://github.com/leasehold/leasehold/blob/main/docs/testing.md
//
// The kit is a module of its own,
// github.com/leasehold/leasehold/leasetest, so that users of the locks
// never download miniredis.
package leasetest
