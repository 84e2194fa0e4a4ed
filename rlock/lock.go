package rlock

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

// Lock is a reentrant lock on one name. It implements lease.Locker. Its
// constructor does not fail: bad input is reported by the first Acquire.
type Lock struct {
	bound
	e *engine.Engine
	p *lua.Lock
}

var _ lease.Locker = (*Lock)(nil)

// New returns the reentrant lock name on c. Options: leasehold.WithLeaseTime
// for a fixed lease instead of the watchdog, and leasehold.WithHoldAtLeast.
func New(c *leasehold.Client, name string, opts ...leasehold.LockOption) *Lock {
	cc, cfg := clientcore.Lock(c, opts, core.TakesHoldAtLeast)
	// The protocol is Redisson's RLock.
	p := lua.NewLock(cfg.Key(name), cfg.Lua())
	e := engine.New(cc, name, cfg, p)
	return &Lock{e.Bound(), e, p}
}

// Acquire blocks until the lock is held or ctx is done; on failure it
// returns a *lease.Error and holds nothing. Under a lease of this lock in
// ctx, it re-enters at once.
func (l *Lock) Acquire(ctx context.Context) (*lease.Lease, error) { return l.e.Acquire(ctx) }

// TryAcquire makes one attempt and does not wait: it returns a *lease.Error
// wrapping lease.ErrNotAcquired when another owner holds the lock.
func (l *Lock) TryAcquire(ctx context.Context) (*lease.Lease, error) { return l.e.TryAcquire(ctx) }

// AcquireAsync starts Acquire and returns at once. Cancelling the Future (or
// ctx) before its lease is taken leaves nothing held.
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

// ForceRelease deletes the lock whoever holds it and wakes its waiters, for
// operators, and reports whether there was a lock. Its holder hears at once
// (at its next renewal without client-side caching).
func (l *Lock) ForceRelease(ctx context.Context) (bool, error) { return l.e.ForceRelease(ctx, l.p) }
