package rw

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/clientcore"
	"github.com/leasehold/leasehold/internal/core"
	"github.com/leasehold/leasehold/internal/engine"
	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/lease"
)

// ErrUpgrade is wrapped, with lease.ErrInvalid, by the write lock's error
// under a read lease of the same lock (and no write lease): two readers
// upgrading would wait for each other for ever.
var ErrUpgrade = errors.New("rw: write lock asked for under a read lease of the same lock")

// Lock is a read-write lock on one name. Its constructor does not fail: bad
// input is reported by the first Acquire.
type Lock struct {
	read, write *engine.Engine
	p           *lua.Write // for ForceRelease
}

// New returns the read-write lock name on c. Options: leasehold.WithLeaseTime,
// and leasehold.WithWriterPreference to hold new readers back while a writer
// waits.
func New(c *leasehold.Client, name string, opts ...leasehold.LockOption) *Lock {
	cc, cfg := clientcore.Lock(c, opts, core.TakesWriterPreference)
	// The protocols are Redisson's RReadWriteLock. Read and write leases are
	// reentrant each within their own kind (the engine's scope); each
	// protocol looks for the other's in the ctx.
	r, w := lua.NewRead(cfg.Key(name), cfg.Lua()), lua.NewWrite(cfg.Key(name), cfg.Lua())
	reads, writes := core.Scope{Client: cc, Kind: r.Is().Kind}, core.Scope{Client: cc, Kind: w.Is().Kind}
	rp, wp := &readProtocol{r, name, writes}, &writeProtocol{w, name, reads, writes}
	return &Lock{
		read:  engine.New(cc, name, cfg, rp),
		write: engine.New(cc, name, cfg, wp),
		p:     wp.Write,
	}
}

// readProtocol is the read lock's protocol, which needs the caller's ctx:
// under a write lease of this lock, a read is admitted at once.
type readProtocol struct {
	*lua.Read
	name   string // the lock's name, as leases carry it
	writes core.Scope
}

// Try admits a read under a write lease of this lock at once (the script
// checks that the write lease still holds); any other as lua.Read does.
func (p *readProtocol) Try(ctx context.Context, c rueidis.Client, owner string, wait bool) (lua.Grant, error) {
	if h := core.HoldFrom(ctx, p.writes, p.name); h != nil {
		return p.TryUnder(ctx, c, owner, h.Owner())
	}
	return p.Read.Try(ctx, c, owner, wait)
}

// writeProtocol is the write lock's protocol, which needs the caller's ctx:
// under a read lease of this lock, and no write lease, a write is refused.
type writeProtocol struct {
	*lua.Write
	name          string // the lock's name, as leases carry it
	reads, writes core.Scope
}

// Try refuses an upgrade of a read to a write; any other attempt goes as
// lua.Write does. (Under a write lease the engine re-enters that lease.)
func (p *writeProtocol) Try(ctx context.Context, c rueidis.Client, owner string, wait bool) (lua.Grant, error) {
	if core.HoldFrom(ctx, p.reads, p.name) != nil && core.HoldFrom(ctx, p.writes, p.name) == nil {
		return lua.Grant{}, fmt.Errorf("%w: %w", lease.ErrInvalid, ErrUpgrade)
	}
	return p.Write.Try(ctx, c, owner, wait)
}

// Read is the read lock, held by any number of owners while no writer holds
// (or, with writer preference, waits). Under this lock's write lease it is
// admitted at once.
func (l *Lock) Read() lease.Locker { return l.read }

// Write is the write lock, held by one owner while no reader holds but its
// own downgrades. Under a read lease of this lock, and no write lease, it
// fails with ErrUpgrade.
func (l *Lock) Write() lease.Locker { return l.write }

// IsLocked reports whether anyone holds the lock, for read or write, in one
// round trip.
func (l *Lock) IsLocked(ctx context.Context) (bool, error) { return l.read.IsLocked(ctx) }

// HoldCount adds up the unreleased write and read leases of this lock held
// by the owners of ctx's leases; 0 when ctx carries none. No round trip.
func (l *Lock) HoldCount(ctx context.Context) (int, error) {
	w, err := l.write.HoldCount(ctx)
	if err != nil {
		return 0, err
	}
	r, err := l.read.HoldCount(ctx)
	return w + r, err
}

// RemainTTL is how long the lock lives unless renewed (the writer's lease or
// the longest read hold's): 0 when free, -1ns with no expiry.
func (l *Lock) RemainTTL(ctx context.Context) (time.Duration, error) { return l.read.RemainTTL(ctx) }

// ForceRelease deletes the lock whoever holds it and wakes every waiter, for
// operators, and reports whether there was a lock. Its holders hear at once
// (at their next renewal without client-side caching).
func (l *Lock) ForceRelease(ctx context.Context) (bool, error) { return l.read.ForceRelease(ctx, l.p) }
