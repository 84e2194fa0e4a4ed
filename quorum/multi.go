package quorum

import "github.com/leasehold/leasehold/lease"

// Multi returns a Locker that holds every one of lockers or none (Redisson's
// RedissonMultiLock). It waits for a refused member holding nothing, so Multis
// cannot deadlock; its Lease is lost when any member's is. The first Acquire
// reports bad input.
func Multi(lockers ...lease.Locker) lease.Locker {
	return newLock(every, Config{}, lockers)
}

// MultiWith is Multi tuned by cfg.
func MultiWith(cfg Config, lockers ...lease.Locker) lease.Locker {
	return newLock(every, cfg, lockers)
}
