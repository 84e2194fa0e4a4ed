package quorum

import "github.com/leasehold/leasehold/lease"

// RedLock returns a Locker that holds a majority, N/2+1, of lockers: the same
// lock name taken on N independent Redis servers (Redisson's RedissonRedLock,
// the algorithm of redis.io's "Distributed Locks with Redis"). Each attempt
// asks every server at once, each under Config.NodeTimeout; it succeeds when
// a majority granted the lock within the validity time (TTL - elapsed -
// drift) and took the fencing token. Otherwise it releases every server it
// asked and Acquire tries again after a random delay, until ctx ends. Its
// Lease is lost when the members still held, renewed by their own Clients'
// watchdogs, no longer make a majority, or their validity runs out. Bad
// input (no lockers, a nil one, two made on the same leasehold Client, which
// would count one Redis twice) is returned by the first Acquire, wrapping
// lease.ErrInvalid.
func RedLock(lockers ...lease.Locker) lease.Locker {
	return newLock(majority, Config{}, lockers)
}

// RedLockWith is RedLock tuned by cfg.
func RedLockWith(cfg Config, lockers ...lease.Locker) lease.Locker {
	return newLock(majority, cfg, lockers)
}
