package quorum

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/internal/core"
	"github.com/leasehold/leasehold/lease"
)

// claim is one holder's member leases behind a quorum Lease: it watches them
// and ends the quorum's hold, as lost, when too few remain.
type claim struct {
	q     *lock
	hold  *core.Hold
	drift time.Duration

	mu      sync.Mutex
	members []*lease.Lease // by member index; nil when not held, or ended
	stops   []func() bool  // stop the watch on each member
	alive   int            // non-nil members
	ended   bool           // released or lost: later member events are not ours
	timer   *time.Timer    // fires at the quorum's validity end
}

// claimKey is the context key under which a quorum Lease's context carries
// its claim, for reentrant acquisitions.
type claimKey struct{ q *lock }

// newLease builds the quorum's Lease on the member leases just acquired,
// each asked under links[i]. It uses no goroutine of its own: a member
// lease's context is cancelled when that lease ends, and context.AfterFunc
// counts it.
func (q *lock) newLease(ctx context.Context, members []*lease.Lease, links []*link, token uint64, drift time.Duration) *lease.Lease {
	c := &claim{q: q, members: members, stops: make([]func() bool, len(members)), drift: drift}
	c.hold = core.NewHold(core.HoldConfig{
		Name:  q.name,
		Scope: q.scope,
		// The hold's TTL only bounds retries of Release, which never asks
		// for one: the members retry their own releases.
		TTL:     releaseTimeout,
		Members: c,
	})
	// Chain the quorum Lease's context to the first member lease's, each
	// member's to the next one's, the last to ctx.
	head := &link{Context: ctx}
	prev := head
	for i, m := range members {
		if m != nil {
			prev.link(m.Context())
			prev = links[i]
		}
	}
	ls, _ := c.hold.NewLease(context.WithValue(head, claimKey{q}, c), token) // a new hold is held: no error
	c.watch()
	return ls
}

// link is the context a member is asked under. Its values are those of the
// next member lease in the chain, once linked, then those of its own
// context. A Lease finds the leases of the contexts it was acquired under by
// walking its context's values, so chaining the member leases lets a member
// lock acquired under the quorum Lease find its member lease and re-enter it,
// instead of waiting for itself.
type link struct {
	context.Context
	next atomic.Pointer[context.Context]
}

// link sets the next context in the chain; it is done before the quorum
// Lease is handed out, once the member's attempt no longer uses the context.
func (l *link) link(next context.Context) { l.next.Store(&next) }

func (l *link) Value(key any) any {
	if next := l.next.Load(); next != nil {
		if v := (*next).Value(key); v != nil {
			return v
		}
	}
	return l.Context.Value(key)
}

// watch counts the members held and arms a callback on the end of each, and
// the validity timer.
func (c *claim) watch() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, m := range c.members {
		if m == nil {
			continue
		}
		c.alive++
		// A context already done runs the callback at once, in its own
		// goroutine: it waits for c.mu and finds the member counted.
		c.stops[i] = context.AfterFunc(m.Context(), func() { c.memberEnded(i) })
	}
	c.armLocked()
}

// memberEnded runs when member i's lease ended: lost, or released by the
// claim itself (then the claim has ended and ignores it).
func (c *claim) memberEnded(i int) {
	c.mu.Lock()
	m := c.members[i]
	if c.ended || m == nil {
		c.mu.Unlock()
		return
	}
	c.members[i] = nil
	c.alive--
	if c.alive >= c.q.needed {
		// Still a quorum, though the validity may end sooner now.
		c.armLocked()
		c.mu.Unlock()
		return
	}
	why := m.Err()
	if why == nil {
		why = context.Cause(m.Context())
	}
	cause := core.Errorf("hold", c.q.name, "%w: %d of %d members still held, %d needed (member %d: %v)",
		lease.ErrLost, c.alive, len(c.members), c.q.needed, i, why)
	c.lose(cause)
}

// armLocked sets the timer to the quorum's validity end, as the members'
// deadlines give it now. Watchdog members push their deadlines forward with
// each renewal, so the timer, when it fires, looks again before it declares
// the lease lost.
func (c *claim) armLocked() {
	until, ok := validUntil(c.members, c.q.needed, c.drift)
	if !ok || until.IsZero() {
		return
	}
	d := time.Until(until)
	if c.timer == nil {
		c.timer = time.AfterFunc(d, c.expire)
	} else {
		c.timer.Reset(d)
	}
}

// expire runs when the validity timer fires.
func (c *claim) expire() {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return
	}
	until, ok := validUntil(c.members, c.q.needed, c.drift)
	if ok && (until.IsZero() || time.Now().Before(until)) {
		c.armLocked()
		c.mu.Unlock()
		return
	}
	c.lose(core.Errorf("hold", c.q.name, "%w: the validity ran out: no quorum of members confirmed a renewal in time",
		lease.ErrLost))
}

// lose ends the claim as lost, with c.mu held (it unlocks it): the holder
// hears first, then the members still held are released, so that a lost
// quorum does not leave half its locks renewed for ever. It runs in a
// callback goroutine (AfterFunc), which the releases keep for at most
// releaseTimeout.
func (c *claim) lose(cause error) {
	rest := c.endLocked()
	c.mu.Unlock()
	c.hold.Lose(cause)
	c.q.Go(func() { _ = releaseLeases(context.Background(), rest) })
}

// endLocked marks the claim ended and takes its members for release.
func (c *claim) endLocked() []*lease.Lease {
	c.ended = true
	if c.timer != nil {
		c.timer.Stop()
	}
	for _, stop := range c.stops {
		if stop != nil {
			stop()
		}
	}
	rest := c.members
	c.members = make([]*lease.Lease, len(rest))
	c.alive = 0
	return rest
}

// Release gives the hold up (core.Members). Reentrant leases share the members, so
// only the last Lease (all) gives them up: every member at once. A member
// whose node does not confirm in time stops renewing and runs out on its
// own, so release reports only what it knows: the quorum was no longer held
// (too many members were already gone), or nil.
func (c *claim) Release(ctx context.Context, _ string, all bool) error {
	if !all {
		return nil
	}
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return lease.ErrNotHeld
	}
	rest := c.endLocked()
	c.mu.Unlock()
	held := 0
	for i, err := range releaseLeases(ctx, rest) {
		if rest[i] != nil && !errors.Is(err, lease.ErrNotHeld) {
			held++
		}
	}
	if held < c.q.needed {
		return fmt.Errorf("%w: %d members held at release, %d needed", lease.ErrNotHeld, held, c.q.needed)
	}
	return nil
}

// reenter adds a Lease to the hold h that ctx carries, with the hold's
// token: the leases of one hold fence as one holder.
func (q *lock) reenter(ctx context.Context, h *core.Hold) (*lease.Lease, error) {
	if c, _ := ctx.Value(claimKey{q}).(*claim); c == nil {
		return nil, fmt.Errorf("%w: context carries the hold but not its claim", lease.ErrNotHeld)
	}
	return h.NewLease(ctx, h.Token())
}
