package election

import (
	"context"
	"sync"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/clientcore"
	"github.com/leasehold/leasehold/internal/core"
	"github.com/leasehold/leasehold/internal/engine"
	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/lease"
)

// Election is one Client's part in the election on one name, safe for
// concurrent use. Its constructor does not fail: the first call reports bad
// input.
type Election struct {
	c    *core.Client // nil for a nil *leasehold.Client
	name string       // the name the caller gave; s has its keys
	cfg  core.LockConfig
	s    *lua.Election
	base *engine.Engine // checks the input and the Client; campaigns have their own

	mu      sync.Mutex
	leading *lease.Lease // the latest Campaign's lease; nil before one succeeds
}

// New returns the election name on c. Options: leasehold.WithLeaseTime for
// terms of a fixed length instead of the watchdog's.
func New(c *leasehold.Client, name string, opts ...leasehold.LockOption) *Election {
	cc, cfg := clientcore.Lock(c, opts, 0)
	s := lua.NewElection(cfg.Key(name), cfg.Lua())
	return &Election{c: cc, name: name, cfg: cfg, s: s, base: engine.New(cc, name, cfg, s.Campaign(""))}
}

// Campaign blocks until this caller leads or ctx is done, and publishes
// value as the leader's as it takes the lock. The lease is the leadership:
// its Token is the term, Release resigns. On failure it returns a
// *lease.Error and leads nothing. Under the leadership's Context it
// re-enters, as rlock does.
func (e *Election) Campaign(ctx context.Context, value string) (*lease.Lease, error) {
	// One engine per campaign: its protocol carries the value to publish.
	// It is Redisson's RLock on NAME, with the leader key written, renewed
	// and deleted along with the hold.
	ls, err := e.campaign(value).Acquire(ctx)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.leading = ls
	e.mu.Unlock()
	return ls, nil
}

// Lead campaigns, runs fn while this caller leads, and resigns when fn
// returns or panics: lease.Do for an election, and returns as Do does.
func (e *Election) Lead(ctx context.Context, value string, fn func(ctx context.Context) error) error {
	return lease.Do(ctx, candidate{e: e, value: value}, fn)
}

// candidate is value's campaign as a lease.Locker, for Lead: its Acquire is
// Campaign, so Proclaim speaks for the leadership.
type candidate struct {
	e     *Election
	value string
}

func (c candidate) Acquire(ctx context.Context) (*lease.Lease, error) {
	return c.e.Campaign(ctx, c.value)
}

func (c candidate) TryAcquire(ctx context.Context) (*lease.Lease, error) {
	return c.e.campaign(c.value).TryAcquire(ctx)
}

func (c candidate) AcquireAsync(ctx context.Context) *lease.Future {
	return c.e.campaign(c.value).AcquireAsync(ctx)
}

// campaign is the engine of a campaign for value: its protocol carries the
// value to publish.
func (e *Election) campaign(value string) *engine.Engine {
	return engine.New(e.c, e.name, e.cfg, e.s.Campaign(value))
}

// Proclaim publishes value as the leader's while this Election's latest
// Campaign still leads, in the same term. Otherwise it returns an error
// wrapping lease.ErrNotHeld and changes nothing.
func (e *Election) Proclaim(ctx context.Context, value string) error {
	const op = "proclaim"
	rc, err := e.base.Redis(op)
	if err != nil {
		return err
	}
	e.mu.Lock()
	ls := e.leading
	e.mu.Unlock()
	switch {
	case ls == nil:
		return core.Errorf(op, e.name, "%w: this Election has won no campaign", lease.ErrNotHeld)
	case ls.Err() != nil:
		return core.Errorf(op, e.name, "%w: the leadership was lost: %w", lease.ErrNotHeld, ls.Err())
	}
	ok, err := e.s.Proclaim(ctx, rc, ls.Owner(), value)
	if err != nil {
		return e.base.Fail(op, err)
	}
	if !ok {
		return core.Errorf(op, e.name, "%w: the term is over (resigned, expired or ended in Redis)", lease.ErrNotHeld)
	}
	return nil
}
