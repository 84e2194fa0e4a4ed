package script

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
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

// AcquireRead runs rw_read_acquire: take or re-enter a read of the lock name
// for owner. writerField is the field (WriteField) of a write lease the caller
// holds on name, under which a read is admitted, or "" for none.
func AcquireRead(ctx context.Context, c rueidis.Client, name, owner, writerField string, lease time.Duration) (Grant, error) {
	return ParseGrant(RWReadAcquire.Exec(ctx, c,
		[]string{name, ReadTimeoutPrefix(name, owner), TokenKey(name), WritersKey(name)},
		[]string{Ms(lease), owner, writerField}))
}

// ReleaseRead runs rw_read_release for one read hold of owner, or all of them.
// requestID names the release for the latch, kept for latch.
func ReleaseRead(ctx context.Context, c rueidis.Client, name, owner, requestID string, latch time.Duration, all bool) (int64, error) {
	return RWReadRelease.Exec(ctx, c,
		[]string{name, RWChannel(name), ReadTimeoutPrefix(name, owner), RWKeyPrefix(name),
			UnlockLatchKey(name, requestID), WritersKey(name)},
		[]string{owner, Ms(latch), flag(all)}).AsInt64()
}

// ReadRenewal is the keys and args of rw_read_renew for owner on name.
func ReadRenewal(name, owner string, lease time.Duration) (keys, args []string) {
	return []string{name, ReadTimeoutPrefix(name, owner)}, []string{Ms(lease), owner}
}

// AcquireWrite runs rw_write_acquire: take or re-enter the write lock name
// for owner. announce makes a writer that must wait announce itself to
// leasehold readers (writer preference) for the time until its next attempt
// is due plus grace.
func AcquireWrite(ctx context.Context, c rueidis.Client, name, owner string, lease time.Duration, announce bool, grace time.Duration) (Grant, error) {
	return ParseGrant(RWWriteAcquire.Exec(ctx, c,
		[]string{name, TokenKey(name), WritersKey(name)},
		[]string{Ms(lease), WriteField(owner), flag(announce), Ms(grace)}))
}

// ReleaseWrite runs rw_write_release for one write hold of owner, or all.
func ReleaseWrite(ctx context.Context, c rueidis.Client, name, owner, requestID string, lease, latch time.Duration, all bool) (int64, error) {
	return RWWriteRelease.Exec(ctx, c,
		[]string{name, RWChannel(name), UnlockLatchKey(name, requestID), RWKeyPrefix(name)},
		[]string{WriteField(owner), Ms(lease), Ms(latch), flag(all)}).AsInt64()
}

// WriteRenewal is the keys and args of rw_write_renew for owner on name.
func WriteRenewal(name, owner string, lease time.Duration) (keys, args []string) {
	return []string{name}, []string{Ms(lease), WriteField(owner)}
}

// AbandonWrite runs rw_write_abandon: withdraw the announcement of owner, a
// writer that stops waiting.
func AbandonWrite(ctx context.Context, c rueidis.Client, name, owner string) error {
	return RWWriteAbandon.Exec(ctx, c, []string{WritersKey(name), RWChannel(name)}, []string{WriteField(owner)}).Error()
}

// ForceReleaseRW deletes the read-write lock name whatever its mode and
// publishes ReadUnlockMessage, waking every waiter. It reports whether there
// was a lock to delete.
func ForceReleaseRW(ctx context.Context, c rueidis.Client, name string) (bool, error) {
	n, err := LockForceRelease.Exec(ctx, c, []string{name, RWChannel(name)}, []string{ReadUnlockMessage}).AsInt64()
	return n == 1, err
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
