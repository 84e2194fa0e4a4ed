package script

// The fair lock's scripts (fairqueue). Its watchdog renewal is LockRenew.
var (
	FairAcquire      = load("fair_acquire")
	FairAbandon      = load("fair_abandon")
	FairRelease      = load("fair_release")
	FairForceRelease = load("fair_force_release")
)

// FairQueueKey is the list of owners waiting for the fair lock NAME, oldest
// first: redisson_lock_queue:{NAME}.
func FairQueueKey(name string) string { return Prefixed("redisson_lock_queue", name) }

// FairTimeoutKey is the sorted set of each waiter's deadline (ms, on the
// Redis server's clock) to stay in the queue of the fair lock NAME:
// redisson_lock_timeout:{NAME}.
func FairTimeoutKey(name string) string { return Prefixed("redisson_lock_timeout", name) }

// FairChannel is the channel on which the waiter owner of the fair lock NAME
// is told to try again: redisson_lock__channel:{NAME}:OWNER, as Redisson's
// RFairLock names it.
func FairChannel(name, owner string) string { return LockChannel(name) + ":" + owner }
