package lua

import (
	"context"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/script"
)

// AcquireRead runs rw_read_acquire: take or re-enter a read of the lock name
// for owner. writerField is the field (script.WriteField) of a write lease
// the caller holds on name, under which a read is admitted, or "" for none.
func AcquireRead(ctx context.Context, c rueidis.Client, name, owner, writerField string, lease time.Duration) (Grant, error) {
	return ParseGrant(Exec(ctx, c, script.RWReadAcquire,
		[]string{name, script.ReadTimeoutPrefix(name, owner), script.TokenKey(name), script.WritersKey(name)},
		[]string{Ms(lease), owner, writerField}))
}

// ReleaseRead runs rw_read_release for one read hold of owner, or all of them.
// requestID names the release for the latch, kept for latch.
func ReleaseRead(ctx context.Context, c rueidis.Client, name, owner, requestID string, latch time.Duration, all bool) (int64, error) {
	return Exec(ctx, c, script.RWReadRelease,
		[]string{name, script.RWChannel(name), script.ReadTimeoutPrefix(name, owner), script.RWKeyPrefix(name),
			script.UnlockLatchKey(name, requestID), script.WritersKey(name)},
		[]string{owner, Ms(latch), flag(all)}).AsInt64()
}

// ReadRenewal is the keys and args of rw_read_renew for owner on name.
func ReadRenewal(name, owner string, lease time.Duration) (keys, args []string) {
	return []string{name, script.ReadTimeoutPrefix(name, owner)}, []string{Ms(lease), owner}
}

// AcquireWrite runs rw_write_acquire: take or re-enter the write lock name
// for owner. announce makes a writer that must wait announce itself to
// leasehold readers (writer preference) for the time until its next attempt
// is due plus grace.
func AcquireWrite(ctx context.Context, c rueidis.Client, name, owner string, lease time.Duration, announce bool, grace time.Duration) (Grant, error) {
	return ParseGrant(Exec(ctx, c, script.RWWriteAcquire,
		[]string{name, script.TokenKey(name), script.WritersKey(name)},
		[]string{Ms(lease), script.WriteField(owner), flag(announce), Ms(grace)}))
}

// ReleaseWrite runs rw_write_release for one write hold of owner, or all.
func ReleaseWrite(ctx context.Context, c rueidis.Client, name, owner, requestID string, lease, latch time.Duration, all bool) (int64, error) {
	return Exec(ctx, c, script.RWWriteRelease,
		[]string{name, script.RWChannel(name), script.UnlockLatchKey(name, requestID), script.RWKeyPrefix(name)},
		[]string{script.WriteField(owner), Ms(lease), Ms(latch), flag(all)}).AsInt64()
}

// WriteRenewal is the keys and args of rw_write_renew for owner on name.
func WriteRenewal(name, owner string, lease time.Duration) (keys, args []string) {
	return []string{name}, []string{Ms(lease), script.WriteField(owner)}
}

// AbandonWrite runs rw_write_abandon: withdraw the announcement of owner, a
// writer that stops waiting.
func AbandonWrite(ctx context.Context, c rueidis.Client, name, owner string) error {
	return Exec(ctx, c, script.RWWriteAbandon, []string{script.WritersKey(name), script.RWChannel(name)}, []string{script.WriteField(owner)}).Error()
}

// ForceReleaseRW deletes the read-write lock name whatever its mode and
// publishes script.ReadUnlockMessage, waking every waiter. It reports whether
// there was a lock to delete.
func ForceReleaseRW(ctx context.Context, c rueidis.Client, name string) (bool, error) {
	n, err := Exec(ctx, c, script.LockForceRelease, []string{name, script.RWChannel(name)}, []string{script.ReadUnlockMessage}).AsInt64()
	return n == 1, err
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
