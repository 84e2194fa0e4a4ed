package rw

import (
	"context"
	"errors"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/core"
	"github.com/leasehold/leasehold/internal/engine"
	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/lease"
)

// ErrUpgrade is returned by the write lock's Acquire, TryAcquire and
// AcquireAsync when ctx carries a read lease of the same lock and no write
// lease: upgrading a read to a write is not supported, since two readers
// upgrading at once would wait for each other for ever.
var ErrUpgrade = errors.New("rw: write lock asked for under a read lease of the same lock")

// scope keys reentrancy: read and write leases of the same Client are
// reentrant each within their own kind.
type scope struct {
	c     *core.Client
	write bool
}

// bound lets quorum find a lock's Client and raise its fencing counter.
// Embedded under this unexported name, it adds nothing to godoc.
type bound = engine.Bound

// Lock is a read-write lock on one name. Its constructor does not fail: bad
// input is reported by the first Acquire.
type Lock struct {
	read  *reader
	write *writer
	p     *lua.Write // for ForceRelease
}

// New returns the read-write lock name on c. Options: leasehold.WithLeaseTime
// for a fixed lease instead of the watchdog, leasehold.WithWriterPreference to
// hold new readers back while a writer waits (see the package doc).
func New(c *leasehold.Client, name string, opts ...leasehold.LockOption) *Lock {
	cc := (*core.Client)(c)
	cfg := cc.LockConfig(opts, core.TakesWriterPreference)
	readScope, writeScope := scope{c: cc}, scope{c: cc, write: true}
	// The protocols are Redisson's RReadWriteLock.
	rp := &readProtocol{lua.NewRead(name, cfg.Lua()), writeScope}
	wp := lua.NewWrite(name, cfg.Lua())
	re := engine.New(cc, name, readScope, cfg, rp)
	we := engine.New(cc, name, writeScope, cfg, wp)
	return &Lock{read: &reader{re.Bound(), re}, write: &writer{we.Bound(), we, readScope}, p: wp}
}

// readProtocol is the read lock's protocol, which needs the caller's ctx:
// under a write lease of this lock, a read is admitted at once.
type readProtocol struct {
	*lua.Read
	writes scope
}

// Try admits a read under a write lease of this lock at once (the script
// checks that the write lease still holds); any other as lua.Read does.
func (p *readProtocol) Try(ctx context.Context, c rueidis.Client, owner string, wait bool) (lua.Grant, error) {
	if h := core.HoldFrom(ctx, p.writes, p.Name()); h != nil {
		return p.TryUnder(ctx, c, owner, h.Owner())
	}
	return p.Read.Try(ctx, c, owner, wait)
}

// Name is the lock name, the Redis key of its hash.
func (l *Lock) Name() string { return l.read.e.Name() }

// Read is the read lock: held by any number of owners at once while no
// writer holds. Its Acquire waits while another owner holds the write lock
// (and, with writer preference, while a writer waits). Under a write lease's
// context of this lock it is admitted at once.
func (l *Lock) Read() lease.Locker { return l.read }

// Write is the write lock: held by one owner while no reader holds, except
// for reads taken under its own lease's context. Under a read lease's context
// (and no write lease) its methods return ErrUpgrade.
func (l *Lock) Write() lease.Locker { return l.write }

// IsLocked reports whether anyone holds the lock, for read or write. It reads
// through the client-side cache: no round trip while the cached answer
// stands; it can lag a write to the lock by a few milliseconds, this
// Client's or another's.
func (l *Lock) IsLocked(ctx context.Context) (bool, error) { return l.read.e.IsLocked(ctx) }

// HoldCount is how many leases on this lock the context carries for its
// owner, read and write together: the write lease's count (1 plus its
// reentrant write leases) plus the read lease's (1 plus its reentrant reads).
// 0 when ctx carries no lease of this lock from this Client. It costs no
// round trip.
func (l *Lock) HoldCount(ctx context.Context) (int, error) {
	w, err := l.write.e.HoldCount(ctx)
	if err != nil {
		return 0, err
	}
	r, err := l.read.e.HoldCount(ctx)
	return w + r, err
}

// RemainTTL is how long the lock still lives unless renewed: the writer's
// lease, or the longest live read hold's. 0 when the lock is free, -1ns when
// it is held with no expiry.
func (l *Lock) RemainTTL(ctx context.Context) (time.Duration, error) { return l.read.e.RemainTTL(ctx) }

// ForceRelease deletes the lock whoever holds it, for read or write, and
// wakes every waiter, for operators. It reports whether there was a lock to
// delete. The holders learn of the loss at their next renewal.
func (l *Lock) ForceRelease(ctx context.Context) (bool, error) {
	rc, err := l.read.e.Redis("force-release")
	if err != nil {
		return false, err
	}
	ok, err := l.p.ForceRelease(ctx, rc)
	return ok, l.read.e.Fail("force-release", err)
}

// reader is the read lock.
type reader struct {
	bound
	e *engine.Engine
}

var _ lease.Locker = (*reader)(nil)

// Acquire blocks until a read lease is held or ctx is done. On failure it
// returns a *lease.Error (wrapping ctx.Err() when ctx ended) and holds nothing.
func (r *reader) Acquire(ctx context.Context) (*lease.Lease, error) { return r.e.Acquire(ctx) }

// TryAcquire makes one attempt: a *lease.Error wrapping lease.ErrNotAcquired
// when another owner holds the write lock.
func (r *reader) TryAcquire(ctx context.Context) (*lease.Lease, error) { return r.e.TryAcquire(ctx) }

// AcquireAsync starts Acquire in a goroutine the Client waits for on Close.
func (r *reader) AcquireAsync(ctx context.Context) *lease.Future { return r.e.AcquireAsync(ctx) }

// Name is the lock name.
func (r *reader) Name() string { return r.e.Name() }

// writer is the write lock.
type writer struct {
	bound
	e     *engine.Engine
	reads scope
}

var _ lease.Locker = (*writer)(nil)

// Name is the lock name.
func (w *writer) Name() string { return w.e.Name() }

// Acquire blocks until the write lock is held or ctx is done. On failure it
// returns a *lease.Error (wrapping ctx.Err() when ctx ended, ErrUpgrade under
// a read lease) and holds nothing.
func (w *writer) Acquire(ctx context.Context) (*lease.Lease, error) {
	if err := w.upgrade(ctx, "acquire"); err != nil {
		return nil, err
	}
	return w.e.Acquire(ctx)
}

// TryAcquire makes one attempt: a *lease.Error wrapping lease.ErrNotAcquired
// when another owner holds the lock, for read or write.
func (w *writer) TryAcquire(ctx context.Context) (*lease.Lease, error) {
	if err := w.upgrade(ctx, "try-acquire"); err != nil {
		return nil, err
	}
	return w.e.TryAcquire(ctx)
}

// AcquireAsync starts Acquire in a goroutine the Client waits for on Close.
func (w *writer) AcquireAsync(ctx context.Context) *lease.Future {
	if err := w.upgrade(ctx, "acquire"); err != nil {
		f, run := core.NewFuture(ctx, func(context.Context) (*lease.Lease, error) { return nil, err })
		run()
		return f
	}
	return w.e.AcquireAsync(ctx)
}

// upgrade refuses a write asked for under a read lease of this lock, unless
// ctx carries a write lease too (then it is a reentrant write).
func (w *writer) upgrade(ctx context.Context, op string) error {
	name := w.e.Name()
	if core.HoldFrom(ctx, w.reads, name) != nil && core.HoldFrom(ctx, w.e.Scope(), name) == nil {
		return &lease.Error{Op: op, Name: name, Err: ErrUpgrade}
	}
	return nil
}
