package semaphore

import (
	"context"
	"errors"
	"fmt"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/clientcore"
	"github.com/leasehold/leasehold/internal/core"
	"github.com/leasehold/leasehold/internal/engine"
	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/lease"
)

// maxPermits is the most permits a semaphore may have available, and the
// most AddPermits adds or takes away at once: 2^53 - 1, as many as its
// scripts count exactly (they count in Lua's doubles).
const maxPermits = lua.MaxPermits

// maxWeight is the most permits one lease may hold, 65536: each permit is an
// entry in Redis, renewed one by one.
const maxWeight = lua.MaxPermitsPerLease

// bound lets quorum find the semaphore's Client (a permit draws no fencing
// token, so there is no counter for it to raise). Embedded under this
// unexported name, it adds nothing to godoc.
type bound = engine.Bound

// Semaphore is a leased counting semaphore on one name, a lease.Locker of
// one permit (Weighted, of several). Its constructor does not fail: the first
// call reports bad input.
type Semaphore struct {
	bound
	e    *engine.Engine
	name string // the name the caller gave; s has its keys
	c    *core.Client
	cfg  core.LockConfig
	s    *lua.Semaphore
}

var _ lease.Locker = (*Semaphore)(nil)

// New returns the semaphore name on c, its permits unset: Acquire waits until
// TrySetPermits (or AddPermits) sets them. Options: leasehold.WithLeaseTime.
func New(c *leasehold.Client, name string, opts ...leasehold.LockOption) *Semaphore {
	cc, cfg := clientcore.Lock(c, opts, 0)
	s := &Semaphore{name: name, c: cc, cfg: cfg, s: lua.NewSemaphore(cfg.Key(name), cfg.Lua())}
	s.e = s.engine(1, cfg)
	s.bound = s.e.Bound()
	return s
}

// engine is the engine of leases of n permits. The protocol is Redisson's
// RPermitExpirableSemaphore.
func (s *Semaphore) engine(n int, cfg core.LockConfig) *engine.Engine {
	return engine.New(s.c, s.name, cfg, s.s.Weighted(n))
}

// Acquire blocks until a permit is held or ctx is done; on failure it
// returns a *lease.Error and holds nothing. Not reentrant: under a permit's
// ctx it takes another.
func (s *Semaphore) Acquire(ctx context.Context) (*lease.Lease, error) { return s.e.Acquire(ctx) }

// TryAcquire makes one attempt and does not wait: it returns an error wrapping
// lease.ErrNotAcquired, holding nothing, when no permit is free or larger
// waiters come first.
func (s *Semaphore) TryAcquire(ctx context.Context) (*lease.Lease, error) { return s.e.TryAcquire(ctx) }

// AcquireAsync starts Acquire and returns at once. Cancelling the Future (or
// ctx) before its lease is taken leaves nothing held.
func (s *Semaphore) AcquireAsync(ctx context.Context) *lease.Future { return s.e.AcquireAsync(ctx) }

// Weighted returns the Locker whose leases each hold n permits, taken and
// given back together, ahead of smaller waiters. With n outside 1 to 65536,
// or above the total, its calls fail with lease.ErrInvalid.
func (s *Semaphore) Weighted(n int) lease.Locker {
	cfg := s.cfg
	if cfg.Err == nil && (n < 1 || n > maxWeight) {
		cfg.Err = fmt.Errorf("%w: weight %d is not from 1 to %d permits", lease.ErrInvalid, n, maxWeight)
	}
	return s.engine(n, cfg)
}

// TrySetPermits sets the total to n (0 to 2^53-1) if it was never set,
// waking waiters, and reports whether it did. On failure nothing changes.
func (s *Semaphore) TrySetPermits(ctx context.Context, n int) (bool, error) {
	const op = "set-permits"
	rc, err := s.e.Redis(op)
	if err != nil {
		return false, err
	}
	if n < 0 || int64(n) > maxPermits {
		return false, core.Errorf(op, s.e.Name(), "%w: %d permits is not from 0 to %d", lease.ErrInvalid, n, int64(maxPermits))
	}
	ok, err := s.s.TrySetPermits(ctx, rc, n)
	return ok, s.e.Fail(op, err)
}

// AddPermits adds n permits to the total (n < 0 takes -n away; held permits
// stay held), waking waiters. n and the result must be within ±(2^53-1). On
// failure nothing changes.
func (s *Semaphore) AddPermits(ctx context.Context, n int) error {
	const op = "add-permits"
	rc, err := s.e.Redis(op)
	if err != nil || n == 0 {
		return err
	}
	if int64(n) < -maxPermits || int64(n) > maxPermits {
		return core.Errorf(op, s.e.Name(), "%w: %d permits is not from %d to %d",
			lease.ErrInvalid, n, -int64(maxPermits), int64(maxPermits))
	}
	_, err = s.s.AddPermits(ctx, rc, n)
	// Checked by the script, before it writes: a check here could not
	// see the permits of a concurrent AddPermits.
	if over := (*lua.OutOfRange)(nil); errors.As(err, &over) {
		err = fmt.Errorf("%w: %w", lease.ErrInvalid, err)
	}
	return s.e.Fail(op, err)
}

// AvailablePermits is how many permits an attempt could take now, expired
// ones included: 0 if never set, negative after AddPermits took held ones.
func (s *Semaphore) AvailablePermits(ctx context.Context) (int, error) {
	const op = "inspect"
	rc, err := s.e.Redis(op)
	if err != nil {
		return 0, err
	}
	p, err := s.s.Available(ctx, rc)
	return int(p.Available), s.e.Fail(op, err)
}
