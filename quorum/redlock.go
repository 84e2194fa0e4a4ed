package quorum

import "github.com/leasehold/leasehold/lease"

// RedLock returns a Locker that holds a majority, N/2+1, of lockers: one
// name on N independent Redis servers (Redisson's RedissonRedLock). Its Lease
// is lost when the members held no longer make a majority, or their validity
// runs out. The first Acquire reports bad input, such as two lockers on one
// Client.
func RedLock(lockers ...lease.Locker) lease.Locker {
	return newLock(majority, Config{}, lockers)
}

// RedLockWith is RedLock tuned by cfg.
func RedLockWith(cfg Config, lockers ...lease.Locker) lease.Locker {
	return newLock(majority, cfg, lockers)
}
