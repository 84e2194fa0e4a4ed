package quorum

import "github.com/leasehold/leasehold/lease"

// Multi returns a Locker that holds every one of lockers, or none: Redisson's
// RedissonMultiLock, to lock an order, its stock and its payment together.
// The lockers may live on one Redis or on several. An attempt asks every
// locker at once; if any is held elsewhere, the attempt gives back all it
// took, so nothing stays half-locked, and Acquire waits for that locker alone
// (holding nothing) before it tries again. Its Lease is lost as soon as any
// member's is. Bad input (no lockers, a nil one) is returned by the first
// Acquire, wrapping lease.ErrInvalid.
func Multi(lockers ...lease.Locker) lease.Locker {
	return newLock(every, Config{}, lockers)
}

// MultiWith is Multi tuned by cfg.
func MultiWith(cfg Config, lockers ...lease.Locker) lease.Locker {
	return newLock(every, cfg, lockers)
}
