package fairqueue

import (
	"context"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/core"
	"github.com/leasehold/leasehold/internal/engine"
	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/script"
)

// latch is how long a release's result is kept for a retry to find: the
// release is retried within this window, then left to the lease's expiry.
const latch = 5 * time.Second

// refreshes is how many times a waiter renews its place within one queue
// timeout. Three leaves two thirds of the timeout as margin for a slow round
// trip or a late timer before a live waiter could be taken for a dead one.
const refreshes = 3

// scope keys reentrancy: a lease is reentrant for fair locks of the same
// Client, and a fair lock's lease does not re-enter an rlock of the same name.
type scope struct{ c *core.Client }

// bound lets quorum find the lock's Client and raise its fencing counter.
// Embedded under this unexported name, it adds nothing to Lock's godoc.
type bound = engine.Bound

// Lock is a fair (first come, first served) reentrant lock on one name. It
// implements lease.Locker. Its constructor does not fail: bad input is
// reported by the first Acquire.
type Lock struct {
	bound
	e *engine.Engine
}

var _ lease.Locker = (*Lock)(nil)

// New returns the fair lock name on c. Options: leasehold.WithLeaseTime for a
// fixed lease instead of the watchdog, leasehold.WithQueueTimeout for how
// long a waiter that stops asking keeps its place (default 5s).
func New(c *leasehold.Client, name string, opts ...leasehold.LockOption) *Lock {
	cc := (*core.Client)(c)
	cfg := cc.LockConfig(opts, core.TakesQueueTimeout)
	p := &protocol{
		c:     cc,
		name:  name,
		lease: cfg.TTL(),
		ft:    lua.FairTimes{Queue: cfg.QueueTimeout, Refresh: cfg.QueueTimeout / refreshes},
		// The hash is laid out as rlock's, so it renews as rlock's does.
		renew: lua.NewLock(name, cfg.TTL(), latch),
	}
	e := engine.New(cc, name, scope{cc}, cfg, p)
	return &Lock{e.Bound(), e}
}

// protocol is the fair lock's scripts: Redisson's RFairLock.
type protocol struct {
	c     *core.Client
	name  string
	lease time.Duration
	ft    lua.FairTimes
	renew *lua.Lock
}

func (p *protocol) Kind() string { return "fair" }

// Try makes one attempt. An attempt that waits joins the queue (or refreshes
// the waiter's place in it); one that does not (TryAcquire, a re-entry)
// leaves the queue alone, since nobody would keep the place or give it up.
func (p *protocol) Try(ctx context.Context, owner string, wait bool) (lua.Grant, error) {
	g, err := lua.AcquireFair(ctx, p.c.Redis(), p.name, owner, p.lease, p.ft, wait)
	// The engine sleeps g.Wait before the next attempt unless woken: a
	// waiter must come back before its place runs out, and the head must
	// come back when the holder's lease does.
	if wait && err == nil && !g.Acquired && (g.Wait <= 0 || g.Wait > p.ft.Refresh) {
		g.Wait = p.ft.Refresh
	}
	return g, err
}

func (p *protocol) Release(ctx context.Context, owner, id string, all bool) (int64, error) {
	return lua.ReleaseFair(ctx, p.c.Redis(), p.name, owner, id, p.lease, latch, p.ft, all)
}

func (p *protocol) Renewal(owner string) *core.Renewal {
	return &core.Renewal{Script: script.LockRenew, Keys: p.renew.RenewKeys(), Args: p.renew.RenewArgs(owner)}
}

// Wakeup is the waiter's own channel, so a release wakes the head of the
// queue alone. No key: an invalidation of NAME would wake every waiter at
// once, the herd this lock avoids; an expiry is caught by the head's timer
// instead (see Try).
func (p *protocol) Wakeup(owner string) (channel, key string) {
	return script.FairChannel(p.name, owner), ""
}

// Abandon removes owner's place in the queue when it stops waiting.
func (p *protocol) Abandon(ctx context.Context, owner string) error {
	_, err := lua.AbandonFair(ctx, p.c.Redis(), p.name, owner, p.ft)
	return err
}

// Name is the lock name, the Redis key of its hash.
func (l *Lock) Name() string { return l.e.Name() }

// Acquire blocks until the lock is held or ctx is done; ctx's deadline is the
// wait (Redisson's waitTime). The caller joins the queue at its first attempt
// and gets the lock once everyone ahead has had it or left. On failure it
// returns an error wrapping ctx.Err() when ctx ended, holds nothing, and its place
// in the queue is removed at once. If ctx carries a lease of this lock from
// the same Client, Acquire re-enters: it raises the hold count and returns at
// once, without queueing.
func (l *Lock) Acquire(ctx context.Context) (*lease.Lease, error) { return l.e.Acquire(ctx) }

// TryAcquire makes one attempt and does not wait: it returns an error wrapping
// lease.ErrNotAcquired when another owner holds the lock, or when others wait
// for it (a free lock is theirs first). It never joins the queue.
func (l *Lock) TryAcquire(ctx context.Context) (*lease.Lease, error) { return l.e.TryAcquire(ctx) }

// AcquireAsync starts Acquire and returns at once. Cancelling the Future (or
// ctx) before its lease is taken leaves nothing held and no place in the queue.
func (l *Lock) AcquireAsync(ctx context.Context) *lease.Future { return l.e.AcquireAsync(ctx) }

// IsLocked reports whether anyone holds the lock. It reads through the
// client-side cache: no round trip while the cached answer stands. Like any
// answer about a shared lock it may be stale by the time it returns, and it
// can lag a write to the lock by a few milliseconds, this Client's or
// another's: Redis sends the invalidation just after the write.
func (l *Lock) IsLocked(ctx context.Context) (bool, error) { return l.e.IsLocked(ctx) }

// HoldCount is how many leases the owner whose lease ctx carries holds on
// this lock: 1 plus its reentrant leases not yet released; 0 when ctx carries
// no lease of this lock from this Client, or that lease is no longer held.
// Reading it costs no round trip.
func (l *Lock) HoldCount(ctx context.Context) (int, error) { return l.e.HoldCount(ctx) }

// RemainTTL is how long the current holder's lease still runs: 0 when the
// lock is free, -1ns when it is held with no expiry.
func (l *Lock) RemainTTL(ctx context.Context) (time.Duration, error) { return l.e.RemainTTL(ctx) }

// ForceRelease deletes the lock whoever holds it and tells the head of the
// queue, for operators; the queue itself stays. It reports whether there was
// a lock to delete. The holder learns of the loss at its next renewal.
func (l *Lock) ForceRelease(ctx context.Context) (bool, error) {
	rc, err := l.e.Redis("force-release")
	if err != nil {
		return false, err
	}
	ok, err := lua.ForceReleaseFair(ctx, rc, l.e.Name())
	return ok, l.e.Fail("force-release", err)
}
