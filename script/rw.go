package script

import (
	"strconv"
	"strings"
)

// The read-write lock's scripts (rw).
var (
	RWReadAcquire  = load("rw_read_acquire")
	RWReadRelease  = load("rw_read_release")
	RWReadRenew    = load("rw_read_renew")
	RWWriteAcquire = load("rw_write_acquire")
	RWWriteRelease = load("rw_write_release")
	RWWriteRenew   = load("rw_write_renew")
	RWWriteAbandon = load("rw_write_abandon")
)

// ReadUnlockMessage is published on a read-write lock's channel when a write
// hold ends: every waiter may try (Redisson's READ_UNLOCK_MESSAGE; the event
// hub's WakeAllMessage). A read release that frees the lock publishes
// UnlockMessage, which wakes one waiter.
const ReadUnlockMessage = "1"

// RWChannel is the unlock channel of the read-write lock NAME:
// redisson_rwlock:{NAME}, the one Redisson's read and write locks use.
func RWChannel(name string) string { return Prefixed("redisson_rwlock", name) }

// RWKeyPrefix is the prefix of every read hold key of the lock NAME: {NAME},
// or NAME when it already holds a '{' (Redisson's getKeyPrefix).
func RWKeyPrefix(name string) string { return strings.TrimSuffix(Suffixed(name, ""), ":") }

// ReadTimeoutPrefix is the prefix of the read hold keys of owner on the lock
// NAME: {NAME}:OWNER:rwlock_timeout; hold N is the key PREFIX:N.
func ReadTimeoutPrefix(name, owner string) string { return Suffixed(name, owner) + ":rwlock_timeout" }

// ReadHoldKey is the key of read hold n of owner on the lock NAME, whose TTL
// is that hold's lease: {NAME}:OWNER:rwlock_timeout:N.
func ReadHoldKey(name, owner string, n int) string {
	return ReadTimeoutPrefix(name, owner) + ":" + strconv.Itoa(n)
}

// WriteField is the hash field of owner's write holds: OWNER:write.
func WriteField(owner string) string { return owner + ":write" }

// WritersKey is where writers of the lock NAME that prefer themselves
// announce that they wait: a sorted set of OWNER:write scored by the expiry
// of the announcement (unix ms), leasehold_rwlock_writers:{NAME}. Redisson
// knows nothing of it; it only holds back leasehold readers.
func WritersKey(name string) string { return Prefixed("leasehold_rwlock_writers", name) }
