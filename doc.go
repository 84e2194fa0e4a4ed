// Package leasehold is a family of distributed locks on Redis, laid out as
// Redisson lays them out so that Go and Java services can share a lock:
//
//   - rlock: a reentrant lock, renewed by a watchdog while its holder lives
//   - fairqueue: a fair lock, served in the order its waiters asked
//   - rw: a read-write lock
//   - quorum: Multi (all of several locks) and RedLock (a majority of servers)
//   - semaphore: a leased counting semaphore
//   - election: leader election
//
// A Client wraps one rueidis client; make one per process.
//
//	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}})
//	if err != nil { return err }
//	defer c.Close()
//	l, err := rlock.New(c, "orders").Acquire(ctx) // ctx's deadline is the wait
//	if err != nil { return err }
//	defer l.Release(context.Background())
//
// A failed acquisition holds nothing and writes nothing. The Lease tells its
// holder the moment the lock is lost: l.Lost() is closed, l.Context()
// cancelled, l.Err() says why (see package lease).
//
// A page per kind: https://github.com/leasehold/leasehold/tree/main/docs
package leasehold
