// Package leasehold is a family of distributed locks on Redis: the reentrant
// lock with a watchdog (rlock), the fair lock (fairqueue), the read-write lock
// (rw), locks over several locks or Redis nodes (quorum) and a leased counting
// semaphore (semaphore), laid out in Redis as Redisson lays them out, so Go
// and Java services can share a lock.
//
// A Client wraps one rueidis client: one multiplexed RESP3 connection carries
// the lock scripts, the unlock subscriptions and the cache invalidations that
// wake waiters, and one keeper goroutine renews every watchdog lease.
//
//	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}})
//	if err != nil { return err }
//	defer c.Close()
//	l, err := rlock.New(c, "orders").Acquire(ctx) // ctx's deadline is the wait
//	if err != nil { return err }
//	defer l.Release(context.Background())
//
// The Lease tells its holder the moment the lock is lost: l.Lost() is closed,
// l.Context() cancelled, l.Err() says why. See package lease.
package leasehold
