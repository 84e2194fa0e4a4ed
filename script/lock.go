package script

// The reentrant lock's scripts (rlock).
var (
	LockAcquire      = load("lock_acquire")
	LockRelease      = load("lock_release")
	LockRenew        = load("lock_renew")
	LockForceRelease = load("lock_force_release")
)

// UnlockMessage is published on a lock's channel when it is fully released.
const UnlockMessage = "0"
