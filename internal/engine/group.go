package engine

import (
	"context"
	"math"

	"github.com/leasehold/leasehold/internal/core"
	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/lease"
)

// bound is implemented by every lock of this module, through the Bound or
// the Group it embeds: it names the Clients the lock runs on. Its method is
// unexported, so users neither see nor call it.
type bound interface{ clients() []*core.Client }

// Bound is embedded by each lock built on an Engine, under an unexported
// alias: it tells the locks made of other locks (quorum) which Client the
// lock runs on, and lets them raise its fencing counter. Its methods are
// unexported, so it adds nothing users can see or call.
type Bound struct{ e *Engine }

// Bound returns the Bound of e, for its lock to embed.
func (e *Engine) Bound() Bound { return Bound{e} }

func (b Bound) clients() []*core.Client { return b.e.clients() }

func (b Bound) raiseToken(ctx context.Context, floor uint64) (uint64, error) {
	return b.e.raiseToken(ctx, floor)
}

// Unfenced is embedded, as Bound is, by a lock whose acquisitions draw no
// fencing token (a semaphore's permits): it tells quorum which Client the
// lock runs on, and has no counter to raise (see RaiseToken).
type Unfenced struct{ e *Engine }

// Unfenced returns the Unfenced of e, for its lock to embed.
func (e *Engine) Unfenced() Unfenced { return Unfenced{e} }

func (u Unfenced) clients() []*core.Client { return u.e.clients() }

// Clients returns the Clients l runs on, as far as it tells (locks of this
// module do; others name none).
func Clients(l lease.Locker) []*core.Client {
	if b, ok := l.(bound); ok {
		return b.clients()
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
		b, ok := m.(bound)
		if !ok {
			continue
		}
		for _, c := range b.clients() {
			if !seen[c] {
				seen[c] = true
				g.cs = append(g.cs, c)
			}
		}
	}
	return g
}

func (g Group) clients() []*core.Client { return g.cs }

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

// raiser is implemented by every lock whose acquisitions draw a fencing
// token from redisson_lock_token:{NAME} (the locks of this module, through
// the Bound they embed; not a semaphore's).
type raiser interface {
	raiseToken(ctx context.Context, floor uint64) (uint64, error)
}

// RaiseToken raises the fencing counter of l, when l draws tokens, to at
// least floor and returns the counter's value after; it never lowers it.
// quorum writes the token it chose back to a majority of nodes with it. ok
// is false when l draws no token of its own.
func RaiseToken(ctx context.Context, l lease.Locker, floor uint64) (token uint64, ok bool, err error) {
	r, ok := l.(raiser)
	if !ok {
		return 0, false, nil
	}
	token, err = r.raiseToken(ctx, floor)
	return token, true, err
}

// CanRaiseToken reports whether RaiseToken can raise l's counter.
func CanRaiseToken(l lease.Locker) bool {
	_, ok := l.(raiser)
	return ok
}

func (e *Engine) raiseToken(ctx context.Context, floor uint64) (uint64, error) {
	rc, err := e.Redis("raise-token")
	if err != nil {
		return 0, err
	}
	if floor > math.MaxInt64 {
		return 0, core.Errorf("raise-token", e.name, "%w: token floor %d above 2^63-1", lease.ErrInvalid, floor)
	}
	t, err := lua.RaiseToken(ctx, rc, e.name, floor, e.cfg.TTL())
	return t, e.Fail("raise-token", err)
}
