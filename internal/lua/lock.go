package lua

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/script"
)

// Grant is the answer to one acquisition attempt.
type Grant struct {
	// Acquired reports whether the owner now holds the lock.
	Acquired bool
	// Token is the fencing token drawn by this acquisition (when Acquired).
	Token uint64
	// Count is the owner's hold count after this acquisition (when Acquired).
	Count int64
	// Wait is how long the current holder's lease still runs (when not
	// Acquired); zero or less when Redis gave no expiry.
	Wait time.Duration
}

// Release outcomes, as the release scripts return them (each script's
// header names its replies).
const (
	NotHeld   int64 = -1 // the owner did not hold the lock
	StillHeld int64 = 0  // a hold was given up; the owner still holds the lock
	Freed     int64 = 1  // the lock is free
)

// Ms formats d in whole milliseconds, at least 1, as scripts take durations.
func Ms(d time.Duration) string {
	ms := d.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	return strconv.FormatInt(ms, 10)
}

// ParseGrant reads the "1 TOKEN COUNT" or "0 PTTL" reply of an acquire
// script (see script/lua/lib/reply.lua).
func ParseGrant(res rueidis.RedisResult) (Grant, error) {
	v, err := Ints(res)
	if err != nil {
		return Grant{}, err
	}
	switch {
	case len(v) == 3 && v[0] == 1:
		return Grant{Acquired: true, Token: uint64(v[1]), Count: v[2]}, nil
	case len(v) == 2 && v[0] == 0:
		return Grant{Wait: time.Duration(v[1]) * time.Millisecond}, nil
	}
	return Grant{}, fmt.Errorf("lua: unexpected acquire reply of %d values", len(v))
}

// Ints reads a script's reply of integers written as one string, separated
// by spaces (script/lua/lib/reply.lua): a string reply, unlike an array,
// never overflows a subscribed connection's small output buffer.
func Ints(res rueidis.RedisResult) ([]int64, error) {
	s, err := res.ToString()
	if err != nil {
		return nil, err
	}
	fields := strings.Fields(s)
	v := make([]int64, len(fields))
	for i, f := range fields {
		// A token may pass 2^63 only after centuries of µs: uint64 holds it.
		u, err := strconv.ParseUint(strings.TrimPrefix(f, "-"), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("lua: unexpected reply %q: %w", s, err)
		}
		v[i] = int64(u)
		if strings.HasPrefix(f, "-") {
			v[i] = -v[i]
		}
	}
	return v, nil
}

// Lock is the reentrant lock's keys and arguments for one name and lease,
// derived once so that each run of a script builds nothing it need not.
type Lock struct {
	name, channel, latchPrefix string
	acquireKeys                []string // NAME, token key
	renewKeys                  []string // NAME
	lease, latch               string   // ms
}

// NewLock derives the keys of the lock name, with the given lease and the
// lifetime of release latches.
func NewLock(name string, lease, latch time.Duration) *Lock {
	return &Lock{
		name:        name,
		channel:     script.LockChannel(name),
		latchPrefix: script.UnlockLatchKey(name, ""),
		acquireKeys: []string{name, script.TokenKey(name)},
		renewKeys:   []string{name},
		lease:       Ms(lease),
		latch:       Ms(latch),
	}
}

// Acquire runs lock_acquire: take or re-enter the lock for owner.
func (l *Lock) Acquire(ctx context.Context, c rueidis.Client, owner string) (Grant, error) {
	return ParseGrant(Exec(ctx, c, script.LockAcquire, l.acquireKeys, []string{l.lease, owner}))
}

// Release runs lock_release for one hold of owner, or every hold when all is
// set. requestID names the release so that a retry is answered from the latch.
func (l *Lock) Release(ctx context.Context, c rueidis.Client, owner, requestID string, all bool) (int64, error) {
	every := "0"
	if all {
		every = "1"
	}
	return Exec(ctx, c, script.LockRelease,
		[]string{l.name, l.channel, l.latchPrefix + requestID},
		[]string{script.UnlockMessage, l.lease, owner, l.latch, every}).AsInt64()
}

// RenewKeys and RenewArgs are lock_renew's KEYS and ARGV for owner.
func (l *Lock) RenewKeys() []string { return l.renewKeys }

// RenewArgs is lock_renew's ARGV for owner.
func (l *Lock) RenewArgs(owner string) []string { return []string{l.lease, owner} }

// ForceReleaseLock runs lock_force_release: it reports whether a lock was deleted.
func ForceReleaseLock(ctx context.Context, c rueidis.Client, name string) (bool, error) {
	n, err := Exec(ctx, c, script.LockForceRelease, []string{name, script.LockChannel(name)}, []string{script.UnlockMessage}).AsInt64()
	return n == 1, err
}
