package engine

import (
	"context"
	"math"

	"github.com/leasehold/leasehold/internal/core"
	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/lease"
)

// member is implemented by every lock of this module: by an *Engine, by the
// Bound a lock kind embeds, and by the Group a lock of other locks embeds.
// It names the Clients the lock runs on, and the engine whose fencing
// counter quorum raises (nil when the lock draws no token of its own). Its
// methods are unexported, so users neither see nor call them.
type member interface {
	clients() []*core.Client
	fencer() *Engine
	lockName() string
}

var (
	_ member = (*Engine)(nil)
	_ member = Bound{}
	_ member = Group{}
)

// Bound is embedded by each lock kind's public type, under an unexported
// alias, so that the locks made of other locks (quorum) find its engine. Its
// methods are unexported: it adds nothing users can see or call.
type Bound struct{ e *Engine }

// Bound returns the Bound of e, for its lock to embed.
func (e *Engine) Bound() Bound { return Bound{e} }

func (b Bound) clients() []*core.Client { return b.e.clients() }
func (b Bound) fencer() *Engine         { return b.e.fencer() }
func (b Bound) lockName() string        { return b.e.name }

// lockName is the lock name.
func (e *Engine) lockName() string { return e.name }

// fencer is e when its acquisitions draw a fencing token from
// redisson_lock_token:{NAME} (every lock's do; a semaphore's permits, whose
// channel carries counts, draw none), else nil.
func (e *Engine) fencer() *Engine {
	if e.proto.Is().Weight > 0 {
		return nil
	}
	return e
}

// NameOf is the name of l, a lock of this module: "" for another Locker,
// or a lock made of others.
func NameOf(l lease.Locker) string {
	if m, ok := l.(member); ok {
		return m.lockName()
	}
	return ""
}

// Clients returns the Clients l runs on, as far as it tells (locks of this
// module do; others name none).
func Clients(l lease.Locker) []*core.Client {
	if m, ok := l.(member); ok {
		return m.clients()
	}
	return nil
}

// Group is embedded by a lock made of other locks (quorum): it runs on its
// members' Clients, and its goroutines are ones their Close waits for.
type Group struct{ cs []*core.Client }

// NewGroup returns the Group of members: the Clients they run on, as far as
// they tell (locks of this module do; others are not counted).
func NewGroup(members []lease.Locker) Group {
	var g Group
	seen := make(map[*core.Client]bool)
	for _, m := range members {
		for _, c := range Clients(m) {
			if !seen[c] {
				seen[c] = true
				g.cs = append(g.cs, c)
			}
		}
	}
	return g
}

func (g Group) clients() []*core.Client { return g.cs }
func (g Group) fencer() *Engine         { return nil }
func (g Group) lockName() string        { return "" }

// Go runs f in a goroutine that the Close of every Client of the group waits
// for. When one of them is closed already it runs f in a goroutine that only
// the others (if any) wait for: f then finds that Client's leases lost and
// its calls failing at once.
func (g Group) Go(f func()) {
	if !goJoined(g.cs, f) {
		var dones []func()
		for _, c := range g.cs {
			if done, ok := c.Join(); ok {
				dones = append(dones, done)
			}
		}
		go func() {
			defer runAll(dones)
			f()
		}()
	}
}

// Bound returns a context derived from ctx that also ends when the time of
// the Close of any Client of the group is up (core.Client.Closing), and the
// function that releases it: an acquisition in a goroutine Close waits for
// (AcquireAsync's) must end by then, even with a script in flight.
func (g Group) Bound(ctx context.Context) (context.Context, func()) { return bound(ctx, g.cs) }

func bound(ctx context.Context, cs []*core.Client) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	stops := make([]func() bool, 0, len(cs))
	for _, c := range cs {
		if c.Err() == nil { // a closed Client fails the calls on it by itself
			stops = append(stops, context.AfterFunc(c.Closing(), cancel))
		}
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// goJoined runs f in a goroutine counted by every Client in cs, and reports
// false, running nothing, when one of them is closed.
func goJoined(cs []*core.Client, f func()) bool {
	dones := make([]func(), 0, len(cs))
	for _, c := range cs {
		done, ok := c.Join()
		if !ok {
			runAll(dones)
			return false
		}
		dones = append(dones, done)
	}
	go func() {
		defer runAll(dones)
		f()
	}()
	return true
}

func runAll(fs []func()) {
	for _, f := range fs {
		f()
	}
}

// RaiseToken raises the fencing counter of l, when l draws tokens, to at
// least floor and returns the counter's value after; it never lowers it.
// quorum writes the token it chose back to a majority of nodes with it. ok
// is false when l draws no token of its own.
func RaiseToken(ctx context.Context, l lease.Locker, floor uint64) (token uint64, ok bool, err error) {
	e := fencer(l)
	if e == nil {
		return 0, false, nil
	}
	token, err = e.raiseToken(ctx, floor)
	return token, true, err
}

// CanRaiseToken reports whether RaiseToken can raise l's counter.
func CanRaiseToken(l lease.Locker) bool { return fencer(l) != nil }

func fencer(l lease.Locker) *Engine {
	if m, ok := l.(member); ok {
		return m.fencer()
	}
	return nil
}

func (e *Engine) raiseToken(ctx context.Context, floor uint64) (uint64, error) {
	rc, err := e.Redis("raise-token")
	if err != nil {
		return 0, err
	}
	if floor > math.MaxInt64 {
		return 0, core.Errorf("raise-token", e.name, "%w: token floor %d above 2^63-1", lease.ErrInvalid, floor)
	}
	t, err := lua.RaiseToken(ctx, rc, e.key, floor, e.cfg.TTL())
	return t, e.Fail("raise-token", err)
}
