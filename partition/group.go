package partition

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/clientcore"
	"github.com/leasehold/leasehold/internal/core"
	"github.com/leasehold/leasehold/internal/engine"
	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/lease"
)

// ErrRevoked is the cause of fn's ctx (context.Cause) when its partition is
// no longer this member's: it moved to another member, or this member was
// dropped from the group.
var ErrRevoked = errors.New("partition: revoked")

// opRun is the operation Run's errors name.
const opRun = "run"

// Group is one member's part in the partition group on one name: n
// partitions shared among the members, each Client (process) one member per
// Group it runs. Its constructor does not fail: Run reports bad input.
type Group struct {
	lc   *leasehold.Client // the partitions' locks are made on it
	c    *core.Client      // nil for a nil Client
	name string
	n    int
	opts options
	ttl  time.Duration // the membership's lease
	p    *lua.Group
	// base is the membership: a hold of p's (lua.KindMember) that Run
	// takes, the keeper renews and Close releases, as a lock's.
	base    *engine.Engine
	running atomic.Bool

	mu    sync.Mutex
	owned []bool // the partitions whose fn runs now
	stats Stats
}

// New returns this Client's member of the group name of n partitions,
// numbered 0 to n-1. Every member of a group must give the same n. The
// Client's watchdog (leasehold.WithWatchdog) is the lease of the membership
// and of the partitions. Options: WithCapacity.
func New(c *leasehold.Client, name string, n int, opts ...Option) *Group {
	cc, cfg := clientcore.Lock(c, nil, 0)
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	// A membership is no lease users hold: the Observer hears of the
	// partitions' leases (rlocks), not of it.
	cfg.Observer = nil
	g := &Group{lc: c, c: cc, name: name, n: n, opts: o, ttl: cfg.TTL()}
	g.p = lua.NewGroup(cfg.Key(name), n, o.capacity, cfg.Lua())
	g.base = engine.New(cc, name, cfg, g.p)
	if n > 0 && n <= lua.MaxPartitions {
		g.owned = make([]bool, n)
	}
	return g
}

// Name returns the group's name, as New was given it (without the Client's
// key prefix).
func (g *Group) Name() string { return g.name }

// Owned returns the partitions whose fn runs now on this member, ascending.
// Safe for concurrent use.
func (g *Group) Owned() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	parts := make([]int, 0, g.stats.Owned)
	for p, on := range g.owned {
		if on {
			parts = append(parts, p)
		}
	}
	return parts
}

// Stats is a member's view of its group, read without a round trip.
type Stats struct {
	// Members is how many members the group had at this member's last
	// look; 0 while it is not a member.
	Members int
	// Generation is the group's assignment's, at the last look: it rises
	// with every change of who owns what.
	Generation uint64
	// Rebalances counts the changes of the assignment this member has
	// acted on (a generation it had not seen).
	Rebalances uint64
	// Assigned is how many partitions are this member's; Owned how many of
	// them run fn now (see Group.Owned).
	Assigned, Owned int
}

// Stats returns the member's view of its group. Safe for concurrent use.
func (g *Group) Stats() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stats
}

// own marks partition p's fn running or not.
func (g *Group) own(p int, on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.owned[p] != on {
		g.owned[p] = on
		if on {
			g.stats.Owned++
		} else {
			g.stats.Owned--
		}
	}
}

// partName is partition p's lock name (lua.PartitionName).
func (g *Group) partName(p int) string { return lua.PartitionName(g.name, p) }

// Run makes this Client a member of the group and runs fn(ctx, part), each
// in a goroutine of its own, for every partition assigned to it, under the
// partition's lease (lease.FromContext(ctx) in fn). fn's ctx ends when the
// partition is revoked (it moved: context.Cause wraps ErrRevoked), lost (its
// lease could not be renewed: lease.ErrLost) or Run ends; once fn returns,
// the partition is released. Lost, it is taken again while it is still this
// member's.
//
// As with errgroup: an fn that returns an error while its ctx is live ends
// Run, which returns that error (the first); an fn that returns nil leaves
// its partition this member's, idle, not run again until it moves and comes
// back or Run runs again; what fn returns once its ctx has ended is
// dropped. A panic in fn is not recovered.
//
// Run returns nil when ctx ends; fn's error; or a *lease.Error when Redis
// refuses for good or the Client closes (wrapping lease.ErrClosed): Redis
// that does not answer for a while is waited out. It returns having
// cancelled every fn's ctx, left the group and waited for every fn to
// return and its partition to be released: it leaves no goroutine behind.
// Bad input (a nil Client, an empty name, n outside 1 to 16384, a bad
// option, a nil fn) or another Run of this Group running returns at once a
// *lease.Error wrapping lease.ErrInvalid.
func (g *Group) Run(ctx context.Context, fn func(ctx context.Context, part int) error) error {
	if err := g.check(fn); err != nil {
		return err
	}
	if !g.running.CompareAndSwap(false, true) {
		return core.Errorf(opRun, g.name, "%w: this Group is running already", lease.ErrInvalid)
	}
	defer g.running.Store(false)
	if ctx.Err() != nil {
		return nil
	}
	return newMember(ctx, g, fn).run()
}

// check reports bad input and a closed Client as Run's error.
func (g *Group) check(fn func(context.Context, int) error) error {
	if err := g.base.Check(opRun); err != nil {
		return err
	}
	switch {
	case g.n <= 0 || g.n > lua.MaxPartitions:
		return core.Errorf(opRun, g.name, "%w: %d partitions, want 1 to %d", lease.ErrInvalid, g.n, lua.MaxPartitions)
	case g.opts.err != nil:
		return core.Errorf(opRun, g.name, "%w", g.opts.err)
	case fn == nil:
		return core.Errorf(opRun, g.name, "%w: nil fn", lease.ErrInvalid)
	}
	return nil
}
