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
// clock, fencing tokens rise. It differs from a real Redis in two ways that
// tests meet:
//
//   - No client-side caching: a holder hears that its lock was removed at
//     its next renewal, so the kit's Clients renew every 0.5s (a 1.5s
//     watchdog unless WithWatchdog says otherwise); a fixed lease hears of
//     it when it runs out.
//   - One server: no replicas (WithReplicas fails acquisitions with
//     lease.ErrNotReplicated), Cluster, Sentinel, ACL or failover.
//
// Warnings go to the test's log unless WithObserver is given, all but the
// one of the first point above, which every kit Client would give. The whole
// list, integration tests against a real Redis and faults to inject:
// https://github.com/leasehold/leasehold/blob/main/docs/testing.md
//
// The kit is a module of its own, so that users of the locks never
// download miniredis.
package leasetest
