package core

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/leasestate"
	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/internal/retry"
	"github.com/leasehold/leasehold/lease"
)

// Members gives up a hold made of other holds (a quorum's): one hold, or
// every hold when all is set, with requestID the same across the retries
// of one release. It returns an error wrapping lease.ErrNotHeld when the
// holds were gone.
type Members interface {
	Release(ctx context.Context, requestID string, all bool) error
}

// HoldConfig describes a hold to NewHold.
type HoldConfig struct {
	// Name is the lock name; errors carry it.
	Name string
	// Kind is the lock kind, for the observer ("rlock", "fair", ...).
	Kind string
	// Owner is the owner field in Redis, CLIENT_ID:LEASE_ID.
	Owner string
	// Scope tells locks of different kinds apart for reentrancy: a Lease
	// carries its hold in its context under (Scope, Name).
	Scope Scope
	// TTL is the lease time Redis was given.
	TTL time.Duration
	// Renewed: a watchdog lease, which the Keeper extends every round by
	// Protocol.Renewal(Owner), made at the first round the hold sees (most
	// holds are given back before one). Unset for a fixed lease, which runs
	// out TTL after it was taken.
	Renewed bool
	// Protocol is the lock kind's, whose release script on Redis gives the
	// hold up; nil for a hold made of other holds, which Members gives up.
	Protocol lua.Protocol
	Redis    rueidis.Client
	// HoldAtLeast is how long after Won, when the acquisition's reply came,
	// a release leaves the lock taken by no holder (WithHoldAtLeast); zero
	// for none.
	HoldAtLeast time.Duration
	Won         time.Time
	// Members gives up a hold made of other holds (quorum's).
	Members Members
	// Observer, when set, hears of the hold's leases (see lease.Event).
	Observer lease.Observer
	// Presence is where the hold lives in Redis, for the guard that tells
	// the holder at once when it is gone; zero for a hold that lives in
	// other holds (quorum's).
	Presence lua.Presence
	// Pass, when set, lets the hold's last release pass the lock to a
	// waiter of the same Client (see Pass).
	Pass *Passing
}

// Passing is how a lock's last release passes it to a waiter of its own
// Client in one script (lua.Handoff), through the waiters' line
// (internal/handoff): one per lock, shared by its holds.
type Passing struct {
	Client  *Client
	Channel string // the lock's channel, which names its line
	To      lua.Handoff
	holds   atomic.Int64
}

// Held reports whether a hold of the lock, on this Client, is held now: an
// Acquire then need not try the lock before it waits, since the hold's
// release passes it on or publishes.
func (p *Passing) Held() bool { return p.holds.Load() > 0 }

type state int

const (
	held     state = iota // the owner holds the lock
	lost                  // the hold is gone: renewal failed, it expired, or its Client closed
	released              // every Lease on the hold was released
)

// closed is the Lost channel of a hold lost before anyone asked for it.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// ReleaseTimeout bounds one Release: it is sent even when the caller's ctx
// has ended, and retried under one request id until Redis answers or this
// has passed.
const ReleaseTimeout = 5 * time.Second

// errReleased is the cause of a hold's context once every lease is released.
var errReleased = fmt.Errorf("%w: released", lease.ErrNotHeld)

// Hold is one owner's claim on a lock, shared by the Lease of the first
// acquisition and the Leases of its reentrant acquisitions. The engine
// creates it once an acquire script succeeded; users only meet it through
// lease.Lease, whose leasestate.Hold it is.
//
// Its context and Lost channel are made when first asked for: a lock taken
// and released in a hot loop pays for neither.
type Hold struct {
	cfg HoldConfig

	mu        sync.Mutex
	state     state
	err       error  // why the hold was lost
	leases    int    // Leases not yet released
	token     uint64 // the first Lease's fencing token, every re-entry's too
	releasing bool   // the last Lease's release is in flight: not renewed, not read
	// unconfirmed: a release of the last Lease was sent and not confirmed,
	// so Redis may have applied it; the hold found gone is then released.
	unconfirmed bool
	reading     chan struct{} // closed when the guard's read of the hold in flight ends
	aborts      []*abort      // releases in flight, ended when the hold is lost
	// guardAt is the hold's place among the guard's holds of its key, -1
	// when not guarded; alone is the array of that slice while the hold is
	// the first on its key. The guard's lock guards these three.
	guardAt  int
	alone    [1]*Hold
	armed    bool // the guard's arming delay passed (see guard.invalidate)
	timer    *time.Timer
	deadline time.Time
	renew    *lua.Call // the renewal script's call, made at first use (see renewal)
	keeper   *Keeper
	since    time.Time       // when the hold was made
	ctx      context.Context // parent of the Leases' contexts, cancelled when the hold ends
	cancel   context.CancelCauseFunc
	lost     chan struct{}
}

var _ leasestate.Hold = (*Hold)(nil)

// Scope is what a lease re-enters besides its lock's name: locks of one kind
// (Kind, its row in lua.Kinds) made from one Client, or one lock made of
// other locks (Group, an id of its own).
type Scope struct {
	Client *Client
	Kind   *lua.Kind
	Group  uint64
}

// groups draws the ids of Scope.Group.
var groups atomic.Uint64

// NewGroupScope returns the scope of a new lock made of other locks: no
// other lock's leases re-enter it.
func NewGroupScope() Scope { return Scope{Group: groups.Add(1)} }

// NewHold returns a held Hold with no Lease yet. Hand it to Keeper.Track, then
// create its first Lease with NewLease.
func NewHold(cfg HoldConfig) *Hold {
	h := &Hold{cfg: cfg, guardAt: -1}
	if cfg.Pass != nil {
		cfg.Pass.holds.Add(1) // until the hold is released or lost
	}
	if cfg.Observer != nil {
		h.since = time.Now()
	}
	return h
}

// observe tells the hold's observer, if any.
func (h *Hold) observe(e lease.Event) {
	if h.cfg.Observer != nil {
		e.Lock, e.Name, e.Owner = h.cfg.Kind, h.cfg.Name, h.cfg.Owner
		h.cfg.Observer.Observe(e)
	}
}

// Name is the lock name.
func (h *Hold) Name() string { return h.cfg.Name }

// Owner is the owner field the hold has in Redis.
func (h *Hold) Owner() string { return h.cfg.Owner }

// Held reports whether the hold still stands: not lost, not fully released.
func (h *Hold) Held() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state == held
}

// Leases is how many Leases on the hold are not yet released; 0 for a nil hold.
func (h *Hold) Leases() int {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.leases
}

// Deadline is the hold's local deadline: when it is lost unless a renewal is
// confirmed first. Zero when the hold has none (not kept by a Keeper).
func (h *Hold) Deadline() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.deadline
}

// Lost is closed when the hold is lost; it stays open after a clean release.
func (h *Hold) Lost() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost == nil {
		if h.state == lost {
			return closed
		}
		h.lost = make(chan struct{})
	}
	return h.lost
}

// Err reports why the hold was lost, nil while it is not.
func (h *Hold) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// Context returns a context with the values of parent and this hold (found
// by HoldFrom), cancelled when the hold ends.
func (h *Hold) Context(parent context.Context) context.Context {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ctx == nil {
		h.ctx, h.cancel = context.WithCancelCause(context.Background())
		switch h.state {
		case lost:
			h.cancel(h.err)
		case released:
			h.cancel(errReleased)
		}
	}
	return &holdContext{Context: h.ctx, hold: h, parent: parent}
}

// holdKey is the context key under which a hold's context finds itself.
// Being of zero size, it costs no allocation to look up.
type holdKey struct{}

// holdContext is a Lease's context before its own cancellation: the hold's
// context (cancellation, no deadline) with the values of the context the
// lease was acquired with. Because Value finds the hold's cancelCtx first, a
// context derived from it is cancelled with the hold without a goroutine to
// watch it.
type holdContext struct {
	context.Context
	hold   *Hold
	parent context.Context
}

func (c *holdContext) Value(key any) any {
	if _, ok := key.(holdKey); ok {
		return c
	}
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.parent.Value(key)
}

// HoldFrom returns the hold that ctx carries for the lock (scope, name), nil
// when ctx carries none or that hold has ended. The engine calls it to detect
// a reentrant acquisition.
func HoldFrom(ctx context.Context, scope Scope, name string) *Hold {
	for c, _ := ctx.Value(holdKey{}).(*holdContext); c != nil; c, _ = c.parent.Value(holdKey{}).(*holdContext) {
		if h := c.hold; h.cfg.Name == name && h.cfg.Scope == scope {
			if !h.Held() {
				return nil
			}
			return h
		}
	}
	return nil
}

// NewLease adds a Lease to the hold. The Lease's context will carry the values
// of parent and the hold itself (for reentrancy), but not parent's
// cancellation: the wait for a lock ends when it is held, the lease lives on.
// It returns an error wrapping lease.ErrNotHeld when the hold has ended.
func (h *Hold) NewLease(parent context.Context, token uint64) (*lease.Lease, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != held {
		return nil, Errorf("acquire", h.cfg.Name, "%w", lease.ErrNotHeld)
	}
	h.leases++
	if h.token == 0 {
		h.token = token
	}
	var since time.Time
	if h.cfg.Observer != nil {
		since = time.Now()
	}
	return AsLease(leasestate.NewLease(h, parent, token, since)), nil
}

// Token is the hold's fencing token, its first Lease's: a re-entry's Lease
// fences as the same holder, so the outer Lease's write after an inner one's
// is accepted and a later holder's token is above them all.
func (h *Hold) Token() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.token
}

// Lose ends the hold as lost with cause: every Lease's context is cancelled,
// the observer told, then Lost closed, so that whoever sees Lost closed finds
// the contexts cancelled and the event recorded. It does nothing once the
// hold has ended.
func (h *Hold) Lose(cause error) {
	h.mu.Lock()
	if h.state != held {
		h.mu.Unlock()
		return
	}
	h.state, h.err = lost, cause
	if p := h.cfg.Pass; p != nil {
		p.holds.Add(-1)
		// Its waiters may not track the key while it is held here (see
		// Pass.Held): one of them tries now.
		defer p.Client.Hub().InvalidateKeys([]string{h.cfg.Presence.Key})
	}
	h.stopTimer()
	if h.cancel != nil {
		h.cancel(cause)
	}
	// From here Lost() made afresh returns a closed channel; one made
	// before is closed below.
	ch, k, aborts := h.lost, h.keeper, h.aborts
	h.aborts = nil
	h.mu.Unlock()
	for _, a := range aborts {
		a.cancel()
	}
	if k != nil {
		k.forget(h)
	}
	h.observe(lease.Event{Kind: lease.Lost, Held: time.Since(h.since), Err: cause})
	if ch != nil {
		close(ch)
	}
}

// drift is the margin by which a holder's local deadline precedes the expiry
// Redis applies: clocks run at slightly different rates and timers fire late.
func drift(ttl time.Duration) time.Duration { return ttl/50 + 2*time.Millisecond }

// startDeadline arms the local deadline: TTL after sent, the moment the script
// that set the TTL was sent, less the drift. Redis cannot expire the key
// before then, so a holder told at the deadline learns before anyone else can
// take the lock.
func (h *Hold) startDeadline(sent time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != held {
		return
	}
	h.deadline = sent.Add(h.cfg.TTL - drift(h.cfg.TTL))
	h.timer = time.AfterFunc(time.Until(h.deadline), h.expire)
}

// expire is the deadline timer's function.
func (h *Hold) expire() {
	why := "no renewal was confirmed within the lease time"
	if !h.cfg.Renewed {
		why = "the lease time ran out"
	}
	h.Lose(Errorf("hold", h.cfg.Name, "%w: %s", lease.ErrLost, why))
}

// confirm moves the deadline after a renewal sent at sent was confirmed.
func (h *Hold) confirm(sent time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	// Still there: a release not confirmed before was not applied.
	h.unconfirmed = false
	if h.state == held && h.timer != nil {
		h.deadline = sent.Add(h.cfg.TTL - drift(h.cfg.TTL))
		h.timer.Reset(time.Until(h.deadline))
	}
}

// renewed reports a confirmed renewal to the observer.
func (h *Hold) renewed(took time.Duration, round int) {
	h.observe(lease.Event{Kind: lease.Renewed, Took: took, Round: round})
}

func (h *Hold) stopTimer() {
	if h.timer != nil {
		h.timer.Stop()
	}
}

// guarded reports whether a loss found in Redis is the hold's news: it is
// held, and its last Lease is not being released (a release empties the
// key first).
func (h *Hold) guarded() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state == held && !h.releasing
}

// renewable reports whether the keeper renews the hold now: a watchdog hold
// whose last Lease is not being released.
func (h *Hold) renewable() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cfg.Renewed && !h.releasing
}

// renewal is the keeper's renewal of a watchdog hold, made at its first use.
func (h *Hold) renewal() *lua.Call {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.renew == nil {
		h.renew = h.cfg.Protocol.Renewal(h.cfg.Owner)
	}
	return h.renew
}

// Release gives up one Lease's share of the hold, and reports it to the
// observer with the lease's token and acquisition time. The last Lease gives
// up every hold of the owner in Redis, so a hold count left too high by an
// attempt whose reply was lost cannot keep the lock.
//
// The release is detached from ctx's cancellation and bounded by
// ReleaseTimeout, so a holder whose request ctx has ended still frees the
// lock. If Redis cannot be reached in that time, the Lease stays held and
// releasable: Release reports it, and a later Release (or Close) tries again.
// A hold lost before the release is confirmed (its local deadline passed
// during a partition) returns at once an error wrapping lease.ErrNotHeld and
// the loss's cause.
func (h *Hold) Release(ctx context.Context, token uint64, since time.Time) error {
	err := h.release(ctx)
	h.observe(lease.Event{Kind: lease.Released, Token: token, Held: time.Since(since), Err: err, Context: ctx})
	return err
}

func (h *Hold) release(ctx context.Context) error {
	last, reading, err := h.take()
	if err != nil {
		return err
	}
	rctx, cancel := h.releaseContext(ctx)
	defer cancel()
	if reading != nil {
		// The guard is reading the hold: Redis would keep tracking its
		// key for good if the read came after the release's DEL.
		select {
		case <-reading:
		case <-rctx.Done():
		}
	}
	if err = rctx.Err(); err == nil {
		err = h.releaseRetrying(rctx, last)
	}
	if err != nil && retry.Transient(err) && h.pastDeadline() {
		// The local deadline passed while Redis did not answer: the hold
		// is lost now, as its timer is about to say.
		h.expire()
	}
	if lost := h.lostErr(); err != nil && lost != nil {
		// Lost before the release was confirmed: there is nothing left
		// to free, and the caller hears it at once.
		return lost
	}
	switch {
	case errors.Is(err, lease.ErrNotHeld) && last && h.wasReleased():
		// An earlier release of ours, not confirmed, was applied.
		h.end()
	case errors.Is(err, lease.ErrNotHeld):
		// Redis says the owner held nothing: the lease ran out before we knew.
		cause := Errorf("hold", h.cfg.Name, "%w: not held in Redis at release", lease.ErrLost)
		h.Lose(cause)
		return Errorf("release", h.cfg.Name, "%w: %w", lease.ErrNotHeld, cause)
	case err != nil && !last && retry.Transient(err):
		// One hold of several, not confirmed: whatever Redis did, the
		// last Lease's release gives up every hold of the owner. Trying
		// again could give up a second one once the latch is gone.
	case err != nil && last && !retry.Transient(err):
		// Redis refuses the release, and would again: stop renewing, so
		// that the lock runs out within its lease rather than stay held
		// for a holder that has let it go.
		h.Lose(Errorf("hold", h.cfg.Name, "%w: its release was refused: %w", lease.ErrLost, err))
		return err
	case err != nil:
		return h.untake(err, last)
	case last:
		h.end()
	}
	return nil
}

// Abandon stops keeping the hold: it is lost with cause, no longer renewed,
// and runs out in Redis within its lease.
func (h *Hold) Abandon(cause error) { h.Lose(cause) }

// wasReleased reports whether a release of the last Lease was sent and not
// confirmed, before the hold's local deadline: then only the owner (or an
// operator's force release) could have removed the hold, and a hold found
// gone was released by it.
func (h *Hold) wasReleased() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.unconfirmed && !h.deadline.IsZero() && time.Now().Before(h.deadline)
}

// gone ends the hold that Redis (a renewal, the guard) found gone: released,
// after a release of ours that was not confirmed (wasReleased), else lost
// with cause.
func (h *Hold) gone(cause error) {
	if h.wasReleased() {
		h.end()
		return
	}
	h.Lose(cause)
}

// releaseContext is the context of a release, and the function that ends
// it: detached from ctx's cancellation, so that a request's ctx that has
// ended still frees the lock; bounded by ReleaseTimeout when ctx can end
// (the retries are bounded anyway); done as soon as the hold is lost, when
// there is nothing left to free.
//
// With context.Background or TODO, the usual defer, it is the hold itself
// (lossCtx), which costs no allocation and whose deadline, the hold's own,
// keeps rueidis on its connection's fast path (a context that can be
// cancelled and has no deadline moves a connection used by one goroutine to
// its slower queue).
func (h *Hold) releaseContext(ctx context.Context) (context.Context, func()) {
	if ctx == context.Background() || ctx == context.TODO() {
		return (*lossCtx)(h), func() {}
	}
	var rctx context.Context
	var cancel context.CancelFunc
	// No later than the hold's local deadline, when it is lost whatever
	// Redis answers: rueidis' direct mode, in which a Client made by Open
	// runs while one goroutine uses it, ends a call at its ctx's deadline,
	// not at its cancellation (the abort below).
	end, bounded := time.Time{}, false
	if ctx.Done() != nil {
		end, bounded = time.Now().Add(ReleaseTimeout), true
	}
	if d := h.Deadline(); !d.IsZero() && (!bounded || d.Before(end)) {
		end, bounded = d, true
	}
	if bounded {
		rctx, cancel = context.WithDeadline(context.WithoutCancel(ctx), end)
	} else {
		rctx, cancel = context.WithCancel(context.WithoutCancel(ctx))
	}
	a := &abort{cancel: cancel}
	h.mu.Lock()
	if h.state == lost {
		cancel()
	} else {
		h.aborts = append(h.aborts, a)
	}
	h.mu.Unlock()
	return rctx, func() {
		h.mu.Lock()
		h.aborts = slices.DeleteFunc(h.aborts, func(o *abort) bool { return o == a })
		h.mu.Unlock()
		cancel()
	}
}

// abort ends a release's context when its hold is lost (Lose).
type abort struct{ cancel context.CancelFunc }

// lossCtx is a Hold seen as the context of its release: done when the hold
// is lost, its deadline the hold's local deadline (when it is lost unless
// renewed, and a release stops renewals), no values.
type lossCtx Hold

func (c *lossCtx) Done() <-chan struct{} { return (*Hold)(c).Lost() }
func (c *lossCtx) Value(any) any         { return nil }

func (c *lossCtx) Deadline() (time.Time, bool) {
	d := (*Hold)(c).Deadline()
	return d, !d.IsZero()
}

func (c *lossCtx) Err() error {
	h := (*Hold)(c)
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.state == lost:
		return context.Canceled
	case !h.deadline.IsZero() && !time.Now().Before(h.deadline):
		// Past it, the hold is as good as lost: rueidis must not be sent
		// off with a deadline already gone, which would cut its
		// connection.
		return context.DeadlineExceeded
	}
	return nil
}

// lostErr is the error of a release of a lost hold, nil while it is not
// lost: it wraps lease.ErrNotHeld and the loss's cause (lease.ErrLost or
// lease.ErrClosed).
func (h *Hold) lostErr() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != lost {
		return nil
	}
	return Errorf("release", h.cfg.Name, "%w: %w", lease.ErrNotHeld, h.err)
}

// take counts one Lease's release and reports whether it is the last, and
// for the last, the end of a read of the guard's in flight, if any (see
// beginRead); it fails, wrapping lease.ErrNotHeld, when the hold was lost.
func (h *Hold) take() (last bool, reading <-chan struct{}, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.leases--
	if h.state == lost {
		return false, nil, Errorf("release", h.cfg.Name, "%w: %w", lease.ErrNotHeld, h.err)
	}
	// Decided under the lock: of two reentrant leases released at once,
	// exactly one is the last.
	last = h.leases == 0
	// Stop renewing and reading first: a renewal that runs after the
	// release would report the owner gone, and a read would track a key
	// gone for good.
	h.releasing = last
	if last {
		reading = h.reading
	}
	return last, reading, nil
}

// beginRead marks the hold read by the guard until done is closed, unless
// its last Lease's release has begun or it has ended: it returns false then,
// and the guard reads it no more. The release waits for a read begun before
// it (take).
func (h *Hold) beginRead(done chan struct{}) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != held || h.releasing {
		return false
	}
	h.reading = done
	return true
}

// endRead ends the guard's read begun with done.
func (h *Hold) endRead(done chan struct{}) {
	h.mu.Lock()
	if h.reading == done {
		h.reading = nil
	}
	h.mu.Unlock()
}

// untake undoes take after a release Redis did not confirm (err): the lease
// is still held, and renewed, as far as anyone can tell. The caller may
// release it again; Close will.
func (h *Hold) untake(err error, last bool) error {
	h.mu.Lock()
	h.leases++
	h.releasing = false
	h.unconfirmed = h.unconfirmed || last
	k := h.keeper
	h.mu.Unlock()
	if k != nil {
		// Invalidations of its key were let pass while it was released.
		k.guard.rehint(h)
	}
	if !retry.Transient(err) {
		return err // Redis' error reply, naming the lock
	}
	return Errorf("release", h.cfg.Name, "not confirmed within %v, so the lease is still held "+
		"(Release it again; Close releases it too, or it runs out): %w", ReleaseTimeout, err)
}

// end marks the hold released after its last Lease's release.
func (h *Hold) end() {
	h.mu.Lock()
	var k *Keeper
	if h.state == held {
		h.state = released
		if h.cfg.Pass != nil {
			h.cfg.Pass.holds.Add(-1)
		}
		h.stopTimer()
		if h.cancel != nil {
			h.cancel(errReleased)
		}
		k = h.keeper
	}
	h.mu.Unlock()
	if k != nil {
		k.forget(h)
	}
}

// releaseRetrying runs the release until Redis answers, retrying transport
// errors with backoff under one request id, until ctx ends or ReleaseTimeout
// has passed.
//
// Giving up every hold is answered "not held" when repeated. After a try
// whose outcome is unknown, that answer means the try did release, provided
// the lease could not have run out yet: before the local deadline only the
// owner (or an operator's force release) can remove its hold. Giving up one
// hold of several is made idempotent by the script's latch instead.
func (h *Hold) releaseRetrying(ctx context.Context, all bool) error {
	var id string // no request id where the script reads no latch: no allocation
	if !all || h.cfg.Protocol == nil || !h.cfg.Protocol.Is().Kind.AllUnlatched {
		id = NewRequestID()
	}
	passed, err := h.passOn(ctx, all)
	if !passed {
		err = h.giveUp(ctx, id, all)
	}
	if !retry.Transient(err) || ctx.Err() != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, ReleaseTimeout)
	defer cancel()
	return retry.Do(ctx, func() error {
		err := h.giveUp(ctx, id, all)
		if errors.Is(err, lease.ErrNotHeld) && all && h.beforeDeadline() {
			return nil // an earlier try released it
		}
		return err
	})
}

// passOn gives every hold of the owner up and passes the lock to a waiter
// of the same Client, or publishes it for others who want it, when a
// waiter of this Client stands in the lock's line (see handoff.Lines.Release),
// and reports whether it ran the handoff, with the outcome for the owner as
// giveUp words it. What the pass may have left under a waiter that left
// meanwhile is given back.
func (h *Hold) passOn(ctx context.Context, all bool) (bool, error) {
	p := h.cfg.Pass
	if p == nil || !all || h.keep() > 0 {
		return false, nil
	}
	r, err := p.Client.Lines().Release(ctx, h.cfg.Redis, p.To, p.Channel, h.cfg.Owner)
	if r.GiveBack != "" {
		h.giveBack(r.GiveBack)
	}
	switch {
	case !r.Ran:
		return false, nil
	case err != nil && !retry.Transient(err):
		return true, RedisErr("release", h.cfg.Name, err)
	case err != nil:
		return true, err
	case r.Outcome == lua.NotHeld:
		return true, lease.ErrNotHeld
	}
	return true, nil
}

// giveBack releases, in the background, every hold of owner, a waiter's
// that left while the lock was being passed to it. Close waits for it.
func (h *Hold) giveBack(owner string) {
	c := h.cfg.Pass.Client
	undo := func() {
		ctx, cancel := context.WithTimeout(c.Closing(), ReleaseTimeout)
		defer cancel()
		_ = retry.Do(ctx, func() error {
			_, err := h.cfg.Protocol.Release(ctx, h.cfg.Redis, owner, "", true, 0)
			return err
		})
	}
	if !c.Go(undo) {
		undo()
	}
}

// giveUp gives the owner's holds up in Redis, one or all, by the kind's
// release script (or the members'), under requestID: an error wrapping
// lease.ErrNotHeld when the owner held nothing, Redis' error reply as a
// *lease.Error, a transport error as it is.
func (h *Hold) giveUp(ctx context.Context, requestID string, all bool) error {
	if h.cfg.Protocol == nil {
		return h.cfg.Members.Release(ctx, requestID, all)
	}
	n, err := h.cfg.Protocol.Release(ctx, h.cfg.Redis, h.cfg.Owner, requestID, all, h.keep())
	switch {
	case err != nil && !retry.Transient(err):
		return RedisErr("release", h.cfg.Name, err)
	case err != nil:
		return err
	case n == lua.NotHeld:
		return lease.ErrNotHeld
	}
	return nil
}

// keep is how long a release now leaves the lock taken by no holder
// (WithHoldAtLeast): what is left of HoldAtLeast since the acquisition's
// reply, on this process's monotonic clock, which no clock skew between
// replicas shortens; 0 without the option.
func (h *Hold) keep() time.Duration {
	if h.cfg.HoldAtLeast <= 0 {
		return 0
	}
	return h.cfg.HoldAtLeast - time.Since(h.cfg.Won)
}

// pastDeadline reports whether the hold's local deadline is known and
// passed.
func (h *Hold) pastDeadline() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.deadline.IsZero() && !time.Now().Before(h.deadline)
}

// beforeDeadline reports whether the hold's local deadline is known and not
// yet passed.
func (h *Hold) beforeDeadline() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.deadline.IsZero() && time.Now().Before(h.deadline)
}

// NewRequestID returns a random id for one release request.
func NewRequestID() string { return strconv.FormatUint(rand.Uint64(), 36) }
