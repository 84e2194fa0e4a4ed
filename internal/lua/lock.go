package lua

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/script"
)

// The reentrant lock's scripts, Redisson's RLock: the fair lock and the
// election renew with lock_renew too, and the read-write lock's force
// release is lock_force_release on its own channel.
var (
	lockAcquire      = load("lock_acquire")
	lockRelease      = load("lock_release")
	lockReleaseAll   = load("lock_release_all")
	lockRenew        = load("lock_renew")
	lockForceRelease = load("lock_force_release")
	lockHandoff      = load("lock_handoff")
	lockWant         = load("lock_want")
)

// Lock is the reentrant lock (rlock) on one name, its keys and arguments
// derived once so that each run of a script builds nothing it need not.
type Lock struct {
	Traits
	k            script.Keys
	latchPrefix  string
	acquireKeys  []string // NAME, token
	renewKeys    []string // NAME
	handoffKeys  []string // NAME, channel, token, wanted
	wantKeys     []string // NAME, wanted
	freeKeys     []string // NAME, channel
	lease, latch string   // ms
}

var (
	_ Protocol = (*Lock)(nil)
	_ Handoff  = (*Lock)(nil)
	_ Wanter   = (*Lock)(nil)
)

// NewLock returns the reentrant lock name with the settings of cfg.
func NewLock(name string, cfg Config) *Lock {
	k := script.KeysOf(name)
	return &Lock{
		Traits:      Traits{Kind: KindRLock},
		k:           k,
		latchPrefix: k.UnlockLatch(""),
		acquireKeys: []string{name, k.Token},
		renewKeys:   []string{name},
		handoffKeys: []string{name, k.Channel, k.Token, k.Wanted},
		wantKeys:    []string{name, k.Wanted},
		freeKeys:    []string{name, k.Channel},
		lease:       Ms(cfg.Lease),
		latch:       cfg.latchMs(),
	}
}

// Try runs lock_acquire: take or re-enter the lock for owner.
func (l *Lock) Try(ctx context.Context, c rueidis.Client, owner string, _ bool) (Grant, error) {
	return ParseGrant(lockAcquire.exec(ctx, c, l.acquireKeys, []string{l.lease, owner}))
}

// Release runs lock_release; with keep, a release that frees the lock
// leaves it taken by no holder for keep. The release of every hold without
// keep runs lock_release_all, that path of lock_release alone.
func (l *Lock) Release(ctx context.Context, c rueidis.Client, owner, requestID string, all bool, keep time.Duration) (int64, error) {
	if all && keep <= 0 {
		return lockReleaseAll.exec(ctx, c, l.freeKeys, []string{script.UnlockMessage, owner}).AsInt64()
	}
	return lockRelease.exec(ctx, c,
		[]string{l.k.Name, l.k.Channel, l.latchPrefix + requestID},
		[]string{script.UnlockMessage, l.lease, owner, l.latch, flag(all), keepMs(keep)}).AsInt64()
}

// TryWanting runs lock_acquire and, in the same round trip, lock_want: a
// waiter that does not listen leaves its mark when it fails, and deletes it
// when it wins.
func (l *Lock) TryWanting(ctx context.Context, c rueidis.Client, owner string, delay, margin time.Duration) (Grant, error) {
	_, sharded := c.(Sharded)
	try := Call{script: lockAcquire, Keys: l.acquireKeys, Args: []string{l.lease, owner}}
	want := Call{script: lockWant, Keys: l.wantKeys, Args: []string{owner, Ms(delay), Ms(margin)}}
	res := c.DoMulti(ctx, try.Cmd(c, sharded), want.Cmd(c, sharded))
	if IsNoScript(res[0].Error()) {
		// A server without the scripts yet: one at a time, each loaded by
		// EVAL.
		res[0] = lockAcquire.exec(ctx, c, try.Keys, try.Args)
		res[1] = lockWant.exec(ctx, c, want.Keys, want.Args)
	} else if IsNoScript(res[1].Error()) {
		res[1] = lockWant.exec(ctx, c, want.Keys, want.Args)
	}
	// The mark is a hint: a refused lock_want changes nothing the attempt
	// reports.
	return ParseGrant(res[0])
}

// ReleaseTo runs lock_handoff: give up every hold of owner and pass the
// lock, if that frees it, to successor with a lease of lease (ms); with
// ask, only when nobody else wants it (see Handoff).
func (l *Lock) ReleaseTo(ctx context.Context, c rueidis.Client, owner, successor, lease string, ask bool, ahead time.Duration) (Passed, error) {
	a := "-1"
	if ask {
		a = Ms(ahead)
	}
	res := lockHandoff.exec(ctx, c, l.handoffKeys, []string{script.UnlockMessage, lease, owner, successor, a})
	if n, err := res.AsInt64(); err == nil {
		switch {
		case n >= clockTokens:
			// The common case of a handoff: the token alone.
			return Passed{Outcome: HandedOff, Token: uint64(n)}, nil
		case n < NotHeld || n > Freed:
			return Passed{}, fmt.Errorf("lua: unexpected handoff reply %d", n)
		}
		return Passed{Outcome: n}, nil
	}
	s, err := res.ToString()
	if err != nil {
		return Passed{}, err
	}
	var buf [3]int64
	v, err := appendInts(buf[:0], s)
	switch {
	case err != nil:
		return Passed{}, err
	case len(v) == 3 && v[0] == HandedOff:
		return Passed{Outcome: HandedOff, Token: uint64(v[1]), Pending: v[2] == 1}, nil
	case len(v) == 3 && v[0] == Yielded:
		return Passed{Outcome: Yielded, Listeners: v[1], Mark: time.Duration(v[2]) * time.Millisecond}, nil
	}
	return Passed{}, fmt.Errorf("lua: unexpected handoff reply %q", s)
}

// Renewal is lock_renew.
func (l *Lock) Renewal(owner string) *Call {
	return &Call{script: lockRenew, Keys: l.renewKeys, Args: []string{l.lease, owner}}
}

// Presence is owner's field in the lock hash.
func (l *Lock) Presence(owner string) Presence { return Presence{Key: l.k.Name, Field: owner} }

// Wakeup is the lock's channel and its hash, whose invalidation tells of an
// expiry.
func (l *Lock) Wakeup(string) (channel, key string) { return l.k.Channel, l.k.Name }

// ForceRelease runs lock_force_release: it deletes the lock whoever holds it
// and reports whether there was a lock to delete.
func (l *Lock) ForceRelease(ctx context.Context, c rueidis.Client) (bool, error) {
	n, err := lockForceRelease.exec(ctx, c, []string{l.k.Name, l.k.Channel}, []string{script.UnlockMessage}).AsInt64()
	return n == 1, err
}
