package script

import "strings"

// The messages published on a lock's channel.
const (
	// UnlockMessage is published on a lock's channel when it is fully
	// released; it wakes one waiter (Redisson's UNLOCK_MESSAGE).
	UnlockMessage = "0"
	// WakeAllMessage wakes every waiter of a channel: published when a
	// read-write lock's write hold ends (Redisson's READ_UNLOCK_MESSAGE) and
	// on every change of an election's leader.
	WakeAllMessage = "1"
)

// Keys are the keys and channels of the locks on one name, as Redisson
// derives them; the leasehold_ ones are leasehold's own, unknown to Redisson.
type Keys struct {
	Name             string // NAME: a lock's hash, or a semaphore's permits available
	Channel          string // redisson_lock__channel:{NAME}: UnlockMessage on full release
	Token            string // redisson_lock_token:{NAME}: the fencing counter
	FairQueue        string // redisson_lock_queue:{NAME}: a fair lock's waiters, oldest first
	FairTimeout      string // redisson_lock_timeout:{NAME}: each fair waiter's deadline (ms)
	RWChannel        string // redisson_rwlock:{NAME}: a read-write lock's channel
	RWPrefix         string // {NAME}: the prefix of a read-write lock's read hold keys
	Writers          string // leasehold_rwlock_writers:{NAME}: waiting writers, OWNER:write by expiry
	SemaphoreTimeout string // {NAME}:timeout: permit id -> expiry (epoch ms)
	SemaphoreChannel string // redisson_sc:{NAME}: the permits available after a change
	SemaphoreClaims  string // leasehold_semaphore_claims:{NAME}: waiters for several permits
	Leader           string // {NAME}:leader: an election leader's value, token and owner
	ElectionChannel  string // leasehold_election__channel:{NAME}: WakeAllMessage on a new leader or value
	Wanted           string // leasehold_lock_wanted:{NAME}: a waiter that does not listen wants the lock; PTTL: its next try
}

// KeysOf derives the keys of the locks named name. Every key hashes to the
// Redis Cluster slot of name, unless name holds braces that make no hash tag.
func KeysOf(name string) Keys {
	return Keys{
		Name:             name,
		Channel:          prefixed("redisson_lock__channel", name),
		Token:            prefixed("redisson_lock_token", name),
		FairQueue:        prefixed("redisson_lock_queue", name),
		FairTimeout:      prefixed("redisson_lock_timeout", name),
		RWChannel:        prefixed("redisson_rwlock", name),
		RWPrefix:         strings.TrimSuffix(suffixed(name, ""), ":"),
		Writers:          prefixed("leasehold_rwlock_writers", name),
		SemaphoreTimeout: suffixed(name, "timeout"),
		SemaphoreChannel: prefixed("redisson_sc", name),
		SemaphoreClaims:  prefixed("leasehold_semaphore_claims", name),
		Leader:           suffixed(name, "leader"),
		ElectionChannel:  prefixed("leasehold_election__channel", name),
		Wanted:           prefixed("leasehold_lock_wanted", name),
	}
}

// UnlockLatch keeps the result of release requestID for a retry to find:
// redisson_unlock_latch:{NAME}:ID.
func (k Keys) UnlockLatch(requestID string) string {
	return prefixed("redisson_unlock_latch", k.Name) + ":" + requestID
}

// FairChannel is where the fair lock's waiter owner is told to try again:
// redisson_lock__channel:{NAME}:OWNER.
func (k Keys) FairChannel(owner string) string { return k.Channel + ":" + owner }

// ReadHolds is the prefix of owner's read hold keys, {NAME}:OWNER:rwlock_timeout;
// read hold n is PREFIX:n, its TTL that hold's lease.
func (k Keys) ReadHolds(owner string) string { return suffixed(k.Name, owner) + ":rwlock_timeout" }

// prefixed derives a key from a lock name as Redisson does: prefix:{NAME}, or
// prefix:NAME when NAME already holds a '{'. Either way the key hashes to
// the Redis Cluster slot of NAME itself.
func prefixed(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

// suffixed derives a key that ends with suffix: {NAME}:suffix, or NAME:suffix
// when NAME already holds a '{' (Redisson's suffixName).
func suffixed(name, suffix string) string {
	if strings.Contains(name, "{") {
		return name + ":" + suffix
	}
	return "{" + name + "}:" + suffix
}
