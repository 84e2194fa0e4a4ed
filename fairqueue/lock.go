package fairqueue

import (
	"context"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/clientcore"
	"github.com/leasehold/leasehold/internal/core"
	"github.com/leasehold/leasehold/internal/engine"
	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/lease"
)

// bound lets quorum find the lock's Client and raise its fencing counter.
// Embedded under this unexported name, it adds nothing to Lock's godoc.
type bound = engine.Bound

// Lock is a fair (first come, first served) reentrant lock on one name, a
// lease.Locker. Its constructor does not fail: the first Acquire reports bad
// input.
type Lock struct {
	bound
	e *engine.Engine
	p *lua.Fair
}

var _ lease.Locker = (*Lock)(nil)

// New returns the fair lock name on c. Options: leasehold.WithLeaseTime,
// leasehold.WithQueueTimeout for how long a silent waiter keeps its place,
// and leasehold.WithHoldAtLeast.
func New(c *leasehold.Client, name string, opts ...leasehold.LockOption) *Lock {
	cc, cfg := clientcore.Lock(c, opts, core.TakesQueueTimeout|core.TakesHoldAtLeast)
	// The protocol is Redisson's RFairLock.
	p := lua.NewFair(cfg.Key(name), cfg.Lua())
	e := engine.New(cc, name, cfg, p)
	return &Lock{e.Bound(), e, p}
}

// Acquire queues and blocks until the lock is held or ctx is done; on
// failure it returns a *lease.Error, holds nothing and has left the queue.
// Under a lease of this lock in ctx, it re-enters at once.
func (l *Lock) Acquire(ctx context.Context) (*lease.Lease, error) { return l.e.Acquire(ctx) }

// TryAcquire makes one attempt without queueing: it returns an error wrapping
// lease.ErrNotAcquired when another owner holds the lock or others wait.
func (l *Lock) TryAcquire(ctx context.Context) (*lease.Lease, error) { return l.e.TryAcquire(ctx) }

// AcquireAsync starts Acquire and returns at once. Cancelling the Future (or
// ctx) before its lease is taken leaves nothing held or queued.
func (l *Lock) AcquireAsync(ctx context.Context) *lease.Future { return l.e.AcquireAsync(ctx) }

// IsLocked reports whether anyone holds the lock, in one round trip; the
// answer may be stale by the time it returns.
func (l *Lock) IsLocked(ctx context.Context) (bool, error) { return l.e.IsLocked(ctx) }

// HoldCount is how many unreleased leases of this lock the owner of ctx's
// lease holds; 0 when ctx carries none still held. No round trip.
func (l *Lock) HoldCount(ctx context.Context) (int, error) { return l.e.HoldCount(ctx) }

// RemainTTL is how long the current holder's lease still runs: 0 when the
// lock is free, -1ns when it is held with no expiry.
func (l *Lock) RemainTTL(ctx context.Context) (time.Duration, error) { return l.e.RemainTTL(ctx) }

// ForceRelease deletes the lock whoever holds it and tells the head of the
// queue, which stays, for operators; it reports whether there was a lock. Its
// holder hears at once (at its next renewal without client-side caching).
func (l *Lock) ForceRelease(ctx context.Context) (bool, error) { return l.e.ForceRelease(ctx, l.p) }
