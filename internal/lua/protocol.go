package lua

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// Protocol is the calls one lock kind must answer in its locks' life in
// Redis: try, release and renew a hold, and where a waiter is woken and a
// hold lives. What the kind is, rather than does, is data: its Traits. Each
// kind's constructor derives its keys once; the engine calls it and does
// everything else (waiting, reentrancy, holds, futures, errors).
type Protocol interface {
	// Is returns what the lock is, its Traits: every protocol embeds them.
	Is() *Traits
	// Try makes one attempt for owner. wait is set when the caller will
	// wait for the lock (Acquire) and clear for a single attempt
	// (TryAcquire) and for a reentrant one: only an attempt that waits may
	// leave a trace of its waiting (a fair lock's place in the queue, a
	// writer's announcement, a semaphore claim).
	Try(ctx context.Context, c rueidis.Client, owner string, wait bool) (Grant, error)
	// Release gives up one hold of owner, or every hold when all is set.
	// requestID names the release, so that a retry is answered from the
	// unlock latch; it is empty for a release of every hold of a kind that
	// is AllUnlatched. With keep (WithHoldAtLeast, for the kinds that take
	// it), a release that frees the lock leaves it taken by no holder for
	// keep. It returns Freed, StillHeld or NotHeld.
	Release(ctx context.Context, c rueidis.Client, owner, requestID string, all bool, keep time.Duration) (int64, error)
	// Renewal is the keeper's renewal of owner's watchdog hold: a script
	// that returns 1 while owner holds, 0 once it does not.
	Renewal(owner string) *Call
	// Wakeup names where owner's waits are woken: the channel its release
	// messages come on, and the key whose invalidation also wakes it ("" for
	// none).
	Wakeup(owner string) (channel, key string)
	// Presence is where owner's hold lives in Redis: the key whose
	// invalidation hints that it may be gone, and what to read to know.
	Presence(owner string) Presence
}

// Traits are what one lock is, as data the engine and the keeper read.
type Traits struct {
	// Kind is the lock's row in Kinds.
	Kind *Kind
	// Weight is how many permits each waiter waits for, on a channel that
	// carries counts rather than unlock messages (a semaphore's): the hub
	// wakes as many waiters as a message's count covers. 0 for a lock.
	Weight int
	// Keep is how the keeper keeps the places of the lock's waiters while
	// they sleep (a fair lock's queue): one script per round for all of a
	// Client's waiters on the lock, rather than an attempt by each. nil for
	// a kind whose waiters keep no place.
	Keep *Keep
	// Leaves removes what a waiter leaves behind when it stops waiting,
	// besides a hold: its place in a fair queue, a writer's announcement, a
	// semaphore claim. nil for a lock whose waiters leave nothing.
	Leaves Abandoner
}

// Is returns t: a protocol embeds its Traits.
func (t *Traits) Is() *Traits { return t }

// A Handoff is a lock whose release can pass it to a waiter of the same
// Client in the same script: one round trip rather than a release, its
// message and the waiter's acquire (see internal/handoff). ReleaseTo gives
// up every hold of owner and, if that frees the lock, makes successor its
// holder with a lease of lease (the scripts' milliseconds). With ask, it
// does so only when nobody else wants the lock: no other connection
// listens on its channel, and no marked waiter (see Wanter) is due to try
// within ahead; else it publishes and reports them (Yielded).
type Handoff interface {
	ReleaseTo(ctx context.Context, c rueidis.Client, owner, successor, lease string, ask bool, ahead time.Duration) (Passed, error)
}

// Passed is the outcome of a ReleaseTo.
type Passed struct {
	// Outcome is HandedOff, Yielded, or Release's Freed, StillHeld or
	// NotHeld.
	Outcome int64
	// Token is the successor's fencing token, when HandedOff.
	Token uint64
	// Pending is set, when HandedOff after asking, if a marked waiter is
	// due to try later: the next release asks again.
	Pending bool
	// Listeners is how many other connections listen on the lock's
	// channel, and Mark how long a marked waiter's mark still runs (0 for
	// none), when Yielded.
	Listeners int64
	Mark      time.Duration
}

// A Wanter is a lock whose waiters that do not listen on its channel (a
// poller, a TryAcquire loop) leave a mark when they fail, so that a Client
// passing it among its own waiters stands back for their next try (see
// internal/handoff). TryWanting is Try, followed in the same round trip by
// lock_want: owner, if it did not take the lock, is due to try again in
// delay, give or take margin; if it did, its mark is deleted.
type Wanter interface {
	TryWanting(ctx context.Context, c rueidis.Client, owner string, delay, margin time.Duration) (Grant, error)
}

// A ForceReleaser deletes a lock whoever holds it and wakes its waiters
// the way its kind does (for operators), and reports whether there was a
// lock to delete.
type ForceReleaser interface {
	ForceRelease(ctx context.Context, c rueidis.Client) (bool, error)
}

// An Abandoner removes what owner left behind while it waited (see
// Traits.Leaves).
type Abandoner interface {
	Abandon(ctx context.Context, c rueidis.Client, owner string) error
}

// Presence is where a hold lives in Redis. Key is the key whose
// invalidation (a deletion, a flush, an eviction, an expiry, a write of
// anyone's, the holder's own renewals too) hints that the hold may be gone.
// The hold is there while Key is a hash holding Field, or, with Members set,
// a sorted set holding every one of them (a semaphore's permits).
type Presence struct {
	Key, Field string
	Members    []string
}

// Config is what the scripts of one lock take besides its name and owner.
type Config struct {
	// Lease is each hold's lease: the fixed lease time, or the watchdog's.
	Lease time.Duration
	// Latch is how long a release's result is kept for a retried release
	// to find. Default (zero): latch.
	Latch time.Duration
	// QueueTimeout is how long a fair lock's waiter keeps its place after
	// an attempt.
	QueueTimeout time.Duration
	// PreferWriters makes a read-write lock's waiting writers hold new
	// readers back.
	PreferWriters bool
	// Grace is how much longer than its next attempt is due a waiter's
	// announcement (a writer's, a semaphore claim) lasts. Default (zero):
	// grace.
	Grace time.Duration
}

const (
	// latch is how long a release's result is kept by default: the release
	// is retried within this window, then left to the lease's expiry.
	latch = 5 * time.Second
	// grace is an announcement's margin by default: long enough for a late
	// timer or a slow round trip, short enough that a waiter that died
	// does not hold others back for long.
	grace = 5 * time.Second
)

// latchMs and graceMs are cfg's latch and grace, in the scripts' milliseconds.
func (cfg Config) latchMs() string { return Ms(or(cfg.Latch, latch)) }
func (cfg Config) graceMs() string { return Ms(or(cfg.Grace, grace)) }

func or(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

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
	// Told is set (when not Acquired) for a waiter that need not come
	// back on a timer: it is told when to try again (a fair lock's waiter
	// behind the head, whose place the keeper keeps).
	Told bool
}

// Release outcomes, as the release scripts return them (each script's
// header names its replies).
const (
	NotHeld   int64 = -1 // the owner did not hold the lock
	StillHeld int64 = 0  // a hold was given up; the owner still holds the lock
	Freed     int64 = 1  // the lock is free
	HandedOff int64 = 2  // the lock passed to the successor (Handoff)
	Yielded   int64 = 3  // the lock is free, published for others who want it (Handoff)
)

// clockTokens is where the tokens of a fencing counter drawn from the clock
// begin (script/lua/lib/token.lua: every reading of a µs clock since 2001
// is above it): lock_acquire and lock_handoff reply with a token alone, an
// integer, only when it is at least this, far above their other integers.
const clockTokens = 1e15

// keptField is the one field of a lock hash that a release made sooner
// than WithHoldAtLeast after the acquisition leaves, until the rest of that
// time has passed: no owner's (an owner's field ends in :N), so every
// script, Redisson's too, finds the lock taken by another. Its value is the
// owner that released. lock_release.lua and fair_release.lua write it.
const keptField = "leasehold:kept"

// keepMs formats a release's keep for the scripts: "0" for none, else in
// whole milliseconds rounded up, so that the lock is never kept for less.
func keepMs(keep time.Duration) string {
	if keep <= 0 {
		return "0"
	}
	ms := keep / time.Millisecond
	if keep%time.Millisecond != 0 {
		ms++ // no overflow, unlike keep + 999999ns
	}
	return strconv.FormatInt(int64(ms), 10)
}

// Ms formats d in whole milliseconds, at least 1, as scripts take durations.
func Ms(d time.Duration) string {
	ms := d.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	return strconv.FormatInt(ms, 10)
}

// ParseGrant reads the "1 TOKEN COUNT" or "0 PTTL" reply of an acquire
// script (see script/lua/lib/reply.lua), or lock_acquire's TOKEN alone, an
// integer of at least clockTokens: its common case, the lock taken with a
// hold count of 1.
func ParseGrant(res rueidis.RedisResult) (Grant, error) {
	if m, err := res.ToMessage(); err == nil && m.IsInt64() {
		n, _ := m.AsInt64()
		if n < clockTokens {
			return Grant{}, fmt.Errorf("lua: unexpected acquire reply %d", n)
		}
		return Grant{Acquired: true, Token: uint64(n), Count: 1}, nil
	}
	s, err := res.ToString()
	if err != nil {
		return Grant{}, err
	}
	var buf [3]int64
	v, err := appendInts(buf[:0], s)
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
	return appendInts(nil, s)
}

// appendInts appends the integers of s, a reply of integers separated by
// spaces, to dst. Given an array of its caller's (ParseGrant's), it makes
// no allocation.
func appendInts(dst []int64, s string) ([]int64, error) {
	for f := range strings.FieldsSeq(s) {
		// A token may pass 2^63 only after centuries of µs: uint64 holds it.
		neg := strings.HasPrefix(f, "-")
		u, err := strconv.ParseUint(strings.TrimPrefix(f, "-"), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("lua: unexpected reply %q: %w", s, err)
		}
		v := int64(u)
		if neg {
			v = -v
		}
		dst = append(dst, v)
	}
	return dst, nil
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
