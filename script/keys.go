package script

import "strings"

// Prefixed derives a key from a lock name as Redisson does: prefix:{NAME}, or
// prefix:NAME when NAME already holds a '{'. Either way the derived key hashes
// to the same Redis Cluster slot as NAME itself.
func Prefixed(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

// Suffixed derives a key that ends with suffix: {NAME}:suffix, or NAME:suffix
// when NAME already holds a '{' (Redisson's suffixName).
func Suffixed(name, suffix string) string {
	if strings.Contains(name, "{") {
		return name + ":" + suffix
	}
	return "{" + name + "}:" + suffix
}

// LockChannel is the channel on which a full release of the lock NAME is
// published: redisson_lock__channel:{NAME}.
func LockChannel(name string) string { return Prefixed("redisson_lock__channel", name) }

// TokenKey is the fencing counter of the lock NAME, incremented on every
// acquisition: redisson_lock_token:{NAME}, the key Redisson's RFencedLock uses.
func TokenKey(name string) string { return Prefixed("redisson_lock_token", name) }

// UnlockLatchKey is the short-lived result of the release request id on the
// lock NAME: redisson_unlock_latch:{NAME}:ID. A retried release finds it and
// returns the first result instead of releasing twice.
func UnlockLatchKey(name, requestID string) string {
	return Prefixed("redisson_unlock_latch", name) + ":" + requestID
}
