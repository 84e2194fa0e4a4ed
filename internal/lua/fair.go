package lua

import (
	"context"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/script"
)

// The fair lock's scripts, Redisson's RFairLock. Its hash is laid out as the
// reentrant lock's, so it renews with lock_renew.
var (
	fairAcquire      = load("fair_acquire")
	fairAbandon      = load("fair_abandon")
	fairRelease      = load("fair_release")
	fairForceRelease = load("fair_force_release")
	fairKeep         = load("fair_keep")
)

// refreshes is how many times a waiter renews its place within one queue
// timeout. Three leaves two thirds of the timeout as margin for a slow round
// trip or a late timer before a live waiter could be taken for a dead one.
const refreshes = 3

// Fair is the fair (first come, first served) lock on one name, its keys and
// arguments derived once.
type Fair struct {
	Traits
	k                  script.Keys
	latchPrefix        string
	acquireKeys        []string // NAME, queue, timeouts, token, channel
	queueKeys          []string // NAME, queue, timeouts, channel
	refresh            time.Duration
	lease, latch       string // ms
	queueMs, refreshMs string
	renew              *Lock
}

var _ Protocol = (*Fair)(nil)

// NewFair returns the fair lock name with the settings of cfg. A waiter
// comes back at least every cfg.QueueTimeout/3 to keep its place.
func NewFair(name string, cfg Config) *Fair {
	k := script.KeysOf(name)
	refresh := cfg.QueueTimeout / refreshes
	queueKeys := []string{name, k.FairQueue, k.FairTimeout, k.Channel}
	f := &Fair{
		k:           k,
		latchPrefix: k.UnlockLatch(""),
		acquireKeys: []string{name, k.FairQueue, k.FairTimeout, k.Token, k.Channel},
		queueKeys:   queueKeys,
		refresh:     refresh,
		lease:       Ms(cfg.Lease),
		latch:       cfg.latchMs(),
		queueMs:     Ms(cfg.QueueTimeout),
		refreshMs:   Ms(refresh),
		renew:       NewLock(name, cfg),
	}
	f.Traits = Traits{Kind: KindFair, Leaves: f,
		Keep: &Keep{Every: refresh, keys: queueKeys, args: []string{Ms(cfg.QueueTimeout), Ms(refresh), script.UnlockMessage}}}
	return f
}

// Try runs fair_acquire. An attempt that waits joins the queue (or
// refreshes the waiter's place in it); one that does not (TryAcquire, a
// re-entry) leaves the queue alone, since nobody would keep the place or
// give it up.
//
// A waiter that does not get the lock is Told: the keeper keeps its place
// (see Keep) and it tries again when told, on its own channel, that its turn
// has come. Only the head of the queue times the holder's lease, when that
// runs out before the keeper's next round, which would otherwise tell it.
func (f *Fair) Try(ctx context.Context, c rueidis.Client, owner string, wait bool) (Grant, error) {
	g, err := ParseGrant(fairAcquire.exec(ctx, c, f.acquireKeys,
		[]string{f.lease, owner, f.queueMs, f.refreshMs, flag(wait), script.UnlockMessage}))
	// The script's refresh interval is in whole ms: the head times a lease
	// shorter than that, and any other answer is the interval itself.
	if wait && err == nil && !g.Acquired && (g.Wait <= 0 || g.Wait >= f.refresh.Truncate(time.Millisecond)) {
		g.Wait, g.Told = 0, true
	}
	return g, err
}

// Release runs fair_release; on full release the head of the queue is told.
// With keep, a release that frees the lock leaves it taken by no holder for
// keep: the head is told when that runs out, as when a lease does.
func (f *Fair) Release(ctx context.Context, c rueidis.Client, owner, requestID string, all bool, keep time.Duration) (int64, error) {
	return fairRelease.exec(ctx, c,
		[]string{f.k.Name, f.k.FairQueue, f.k.FairTimeout, f.k.Channel, f.latchPrefix + requestID},
		[]string{script.UnlockMessage, f.lease, owner, f.latch, flag(all), f.refreshMs, keepMs(keep)}).AsInt64()
}

// Renewal is the reentrant lock's.
func (f *Fair) Renewal(owner string) *Call { return f.renew.Renewal(owner) }

// Presence is owner's field in the lock hash, as rlock's.
func (f *Fair) Presence(owner string) Presence { return f.renew.Presence(owner) }

// Abandon runs fair_abandon: owner leaves the queue, and the new head is
// told if it has to act.
func (f *Fair) Abandon(ctx context.Context, c rueidis.Client, owner string) error {
	_, err := f.abandon(ctx, c, owner)
	return err
}

// abandon is Abandon, reporting whether owner had a place.
func (f *Fair) abandon(ctx context.Context, c rueidis.Client, owner string) (bool, error) {
	n, err := fairAbandon.exec(ctx, c, f.queueKeys, []string{owner, f.refreshMs, script.UnlockMessage}).AsInt64()
	return n > 0, err
}

// Wakeup is the waiter's own channel, so a release wakes the head of the
// queue alone. No key: an invalidation of NAME would wake every waiter at
// once, the herd this lock avoids; an expiry is caught by the head's timer
// instead (see Try).
func (f *Fair) Wakeup(owner string) (channel, key string) { return f.k.FairChannel(owner), "" }

// ForceRelease runs fair_force_release: it deletes the lock whoever holds it,
// tells the head of the queue, and reports whether there was a lock to
// delete. The queue stays.
func (f *Fair) ForceRelease(ctx context.Context, c rueidis.Client) (bool, error) {
	n, err := fairForceRelease.exec(ctx, c, f.queueKeys, []string{script.UnlockMessage}).AsInt64()
	return n == 1, err
}

// Keep is one fair lock's keep-alive of its waiters' places: fair_keep, run
// by a Client's keeper for every owner of the Client waiting on the lock,
// every Every. Each run refreshes their deadlines, drops waiters at the head
// whose deadline passed, and tells the head when the lock is free or runs out
// before the next run. The queue stays as Redisson lays it out, so Redisson
// waiters, which refresh their own places, share it.
type Keep struct {
	// Every is how often the keeper runs it: the refresh interval, a third
	// of the queue timeout, as often as each waiter's attempt came back.
	Every time.Duration
	keys  []string // NAME, queue, timeouts, channel
	args  []string // queue timeout, refresh interval, message
}

// MaxKept is the most owners one run of Keep takes: Lua unpacks a few
// thousand values at most, and fair_keep unpacks two per owner.
const MaxKept = 1000

// ID is the same for the Keeps of locks of one name and queue timeout, which
// keep their waiters in one run.
func (k *Keep) ID() string { return k.keys[0] + "\x00" + k.args[0] }

// Call is fair_keep for owners, at most MaxKept of them.
func (k *Keep) Call(owners []string) *Call {
	args := make([]string, 0, len(k.args)+len(owners))
	return &Call{script: fairKeep, Keys: k.keys, Args: append(append(args, k.args...), owners...)}
}

// Missing reads fair_keep's reply: the indexes into its owners of those
// that had no place in the queue (it ran out, or the owner got the lock
// meanwhile) and were not given one.
func Missing(res rueidis.RedisResult) ([]int, error) {
	v, err := Ints(res)
	if err != nil {
		return nil, err
	}
	idx := make([]int, len(v))
	for i, n := range v {
		idx[i] = int(n) - 1
	}
	return idx, nil
}
