package rw

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/engine"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/script"
)

// ErrUpgrade is returned by the write lock's Acquire, TryAcquire and
// AcquireAsync when ctx carries a read lease of the same lock and no write
// lease: upgrading a read to a write is not supported, since two readers
// upgrading at once would wait for each other for ever.
var ErrUpgrade = errors.New("rw: write lock asked for under a read lease of the same lock")

const (
	// latch is how long a release's result is kept for a retry to find.
	latch = 5 * time.Second
	// grace is how much longer than its next attempt is due a waiting
	// writer's announcement lasts (writer preference): long enough for a
	// late timer or a slow round trip, short enough that a writer that died
	// does not hold readers back for long.
	grace = 5 * time.Second
)

// scope keys reentrancy: read and write leases of the same Client are
// reentrant each within their own kind.
type scope struct {
	c     *leasehold.Client
	write bool
}

// Lock is a read-write lock on one name. Its constructor does not fail: bad
// input is reported by the first Acquire.
type Lock struct {
	read  engine.Lock
	write writer
}

// New returns the read-write lock name on c. Options: leasehold.WithLeaseTime
// for a fixed lease instead of the watchdog, leasehold.WithWriterPreference to
// hold new readers back while a writer waits (see the package doc).
func New(c *leasehold.Client, name string, opts ...leasehold.LockOption) *Lock {
	channel := script.RWChannel(name)
	readScope, writeScope := scope{c: c}, scope{c: c, write: true}
	l := &Lock{
		read: engine.Lock{Client: c, Name: name, Scope: readScope, Channel: channel, Key: name},
		write: writer{
			wait:  engine.Lock{Client: c, Name: name, Scope: writeScope, Channel: channel, Key: name},
			reads: readScope,
		},
	}
	if c == nil {
		l.write.try = l.write.wait
		return l
	}
	rc := c.Redis()
	cfg := c.LockConfig(opts...)

	r := &l.read
	r.Config = cfg
	r.Try = func(ctx context.Context, owner string, ttl time.Duration) (script.Grant, error) {
		// A read under a write lease of this lock is admitted: the script
		// checks that the write lease still holds.
		field := ""
		if h := lease.HoldFrom(ctx, writeScope, name); h != nil {
			field = script.WriteField(h.Owner())
		}
		return script.AcquireRead(ctx, rc, name, owner, field, ttl)
	}
	r.Release = func(ctx context.Context, owner, id string, all bool) error {
		n, err := script.ReleaseRead(ctx, rc, name, owner, id, latch, all)
		if err == nil && n == script.NotHeld {
			return fmt.Errorf("%w: %s: read", lease.ErrNotHeld, name)
		}
		return err
	}
	r.Renewal = func(owner string, ttl time.Duration) *lease.Renewal {
		keys, args := script.ReadRenewal(name, owner, ttl)
		return &lease.Renewal{Script: script.RWReadRenew, Keys: keys, Args: args}
	}

	w := &l.write.wait
	w.Config = cfg
	w.Try = func(ctx context.Context, owner string, ttl time.Duration) (script.Grant, error) {
		return script.AcquireWrite(ctx, rc, name, owner, ttl, cfg.WriterPreference, grace)
	}
	w.Release = func(ctx context.Context, owner, id string, all bool) error {
		n, err := script.ReleaseWrite(ctx, rc, name, owner, id, cfg.TTL(), latch, all)
		if err == nil && n == script.NotHeld {
			return fmt.Errorf("%w: %s: write", lease.ErrNotHeld, name)
		}
		return err
	}
	w.Renewal = func(owner string, ttl time.Duration) *lease.Renewal {
		keys, args := script.WriteRenewal(name, owner, ttl)
		return &lease.Renewal{Script: script.RWWriteRenew, Keys: keys, Args: args}
	}
	if cfg.WriterPreference {
		w.Abandon = func(ctx context.Context, owner string) error {
			return script.AbandonWrite(ctx, rc, name, owner)
		}
	}
	// TryAcquire does not wait, so it must not announce itself: a copy of
	// the engine whose attempts never do. Same scope, so reentrancy works
	// across both.
	l.write.try = *w
	l.write.try.Abandon = nil
	l.write.try.Try = func(ctx context.Context, owner string, ttl time.Duration) (script.Grant, error) {
		return script.AcquireWrite(ctx, rc, name, owner, ttl, false, grace)
	}
	return l
}

// Name is the lock name, the Redis key of its hash.
func (l *Lock) Name() string { return l.read.Name }

// Read is the read lock: held by any number of owners at once while no
// writer holds. Its Acquire waits while another owner holds the write lock
// (and, with writer preference, while a writer waits). Under a write lease's
// context of this lock it is admitted at once.
func (l *Lock) Read() lease.Locker { return &l.read }

// Write is the write lock: held by one owner while no reader holds, except
// for reads taken under its own lease's context. Under a read lease's context
// (and no write lease) its methods return ErrUpgrade.
func (l *Lock) Write() lease.Locker { return &l.write }

// IsLocked reports whether anyone holds the lock, for read or write. It reads
// through the client-side cache: no round trip while the cached answer
// stands; for a moment after this Client's own acquire or release it may
// report the state from before.
func (l *Lock) IsLocked(ctx context.Context) (bool, error) { return l.read.IsLocked(ctx) }

// RemainTTL is how long the lock still lives unless renewed: the writer's
// lease, or the longest live read hold's. 0 when the lock is free, -1ns when
// it is held with no expiry.
func (l *Lock) RemainTTL(ctx context.Context) (time.Duration, error) { return l.read.RemainTTL(ctx) }

// ForceRelease deletes the lock whoever holds it, for read or write, and
// wakes every waiter, for operators. It reports whether there was a lock to
// delete. The holders learn of the loss at their next renewal.
func (l *Lock) ForceRelease(ctx context.Context) (bool, error) {
	if err := l.read.Check(); err != nil {
		return false, err
	}
	return script.ForceReleaseRW(ctx, l.read.Client.Redis(), l.read.Name)
}

// writer is the write lock: two engines on the same scope, one whose
// attempts announce a waiting writer (writer preference) and one whose
// attempts do not, for TryAcquire.
type writer struct {
	wait  engine.Lock
	try   engine.Lock
	reads scope
}

var _ lease.Locker = (*writer)(nil)

// Acquire blocks until the write lock is held or ctx is done. On failure it
// returns an error (wrapping ctx.Err() when ctx ended, ErrUpgrade under a read lease)
// and holds nothing.
func (w *writer) Acquire(ctx context.Context) (*lease.Lease, error) {
	if err := w.upgrade(ctx); err != nil {
		return nil, err
	}
	return w.wait.Acquire(ctx)
}

// TryAcquire makes one attempt: an error wrapping lease.ErrNotAcquired when
// another owner holds the lock, for read or write.
func (w *writer) TryAcquire(ctx context.Context) (*lease.Lease, error) {
	if err := w.upgrade(ctx); err != nil {
		return nil, err
	}
	return w.try.TryAcquire(ctx)
}

// AcquireAsync starts Acquire in a goroutine the Client waits for on Close.
func (w *writer) AcquireAsync(ctx context.Context) *lease.Future {
	f, run := lease.NewFuture(ctx, w.Acquire)
	if w.wait.Client == nil || !w.wait.Client.Go(run) {
		run() // fails at once: invalid, or the Client is closed
	}
	return f
}

// upgrade refuses a write asked for under a read lease of this lock, unless
// ctx carries a write lease too (then it is a reentrant write).
func (w *writer) upgrade(ctx context.Context) error {
	name := w.wait.Name
	if lease.HoldFrom(ctx, w.reads, name) != nil && lease.HoldFrom(ctx, w.wait.Scope, name) == nil {
		return fmt.Errorf("%w: %s", ErrUpgrade, name)
	}
	return nil
}
