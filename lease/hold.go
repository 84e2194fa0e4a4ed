package lease

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/leasehold/leasehold/script"
)

// ReleaseFunc gives up the owner's holds on Redis: one hold, or every hold
// when all is set. requestID stays the same across retries of one release, so
// the script can answer a retry from its latch. It returns an error wrapping
// ErrNotHeld when the owner held nothing.
type ReleaseFunc func(ctx context.Context, requestID string, all bool) error

// Renewal is the script the Keeper runs every round to extend a watchdog
// hold. It must return 1 while the owner holds the lock and 0 once it does not.
type Renewal struct {
	Script *script.Script
	Keys   []string
	Args   []string
}

// HoldConfig describes a hold to NewHold.
type HoldConfig struct {
	// Name is the lock name; errors carry it.
	Name string
	// Owner is the owner field in Redis, CLIENT_ID:LEASE_ID.
	Owner string
	// Scope tells locks of different kinds apart for reentrancy: a Lease
	// carries its hold in its context under (Scope, Name).
	Scope any
	// TTL is the lease time Redis was given.
	TTL time.Duration
	// Renew is the renewal of a watchdog lease; nil for a fixed lease, which
	// runs out TTL after it was taken.
	Renew *Renewal
	// Release gives the holds up on Redis.
	Release ReleaseFunc
	// Observer, when set, hears of the hold's leases (see Event).
	Observer Observer
}

type state int

const (
	held     state = iota // the owner holds the lock
	lost                  // the hold is gone: renewal failed, it expired, or its Client closed
	released              // every Lease on the hold was released
)

// closed is the Lost channel of a hold lost before anyone asked for it.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Hold is one owner's claim on a lock, shared by the Lease of the first
// acquisition and the Leases of its reentrant acquisitions. Lock
// implementations create it with NewHold once their acquire script
// succeeded; users only meet it through Lease.
//
// Its context and Lost channel are made when first asked for: a lock taken
// and released in a hot loop pays for neither.
type Hold struct {
	cfg HoldConfig

	mu       sync.Mutex
	state    state
	err      error // why the hold was lost
	leases   int   // Leases not yet released
	timer    *time.Timer
	deadline time.Time
	keeper   *Keeper
	since    time.Time       // when the hold was made
	ctx      context.Context // parent of the Leases' contexts, cancelled when the hold ends
	cancel   context.CancelCauseFunc
	lost     chan struct{}
}

// NewHold returns a held Hold with no Lease yet. Hand it to Keeper.Track, then
// create its first Lease with NewLease. cfg.Scope must be comparable.
func NewHold(cfg HoldConfig) *Hold {
	h := &Hold{cfg: cfg}
	if cfg.Observer != nil {
		h.since = time.Now()
	}
	return h
}

// observe tells the hold's observer, if any.
func (h *Hold) observe(e Event) {
	if h.cfg.Observer != nil {
		e.Name, e.Owner = h.cfg.Name, h.cfg.Owner
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

// context returns the hold's context, made on first use and cancelled at
// once if the hold has ended. Called with h.mu held.
func (h *Hold) context() context.Context {
	if h.ctx == nil {
		h.ctx, h.cancel = context.WithCancelCause(context.Background())
		switch h.state {
		case lost:
			h.cancel(h.err)
		case released:
			h.cancel(errReleased)
		}
	}
	return h.ctx
}

// leaseKey is the context key under which a Lease's context finds itself.
// Being of zero size, it costs no allocation to look up.
type leaseKey struct{}

// HoldFrom returns the hold that ctx carries for the lock (scope, name), nil
// when ctx carries none or that hold has ended. Lock implementations call it
// to detect a reentrant acquisition.
func HoldFrom(ctx context.Context, scope any, name string) *Hold {
	for c, _ := ctx.Value(leaseKey{}).(*leaseContext); c != nil; c, _ = c.lease.parent.Value(leaseKey{}).(*leaseContext) {
		if h := c.lease.hold; h.cfg.Name == name && h.cfg.Scope == scope {
			if !h.Held() {
				return nil
			}
			return h
		}
	}
	return nil
}

// NewLease adds a Lease to the hold. The Lease's context will carry the values
// of parent and the lease itself (for reentrancy), but not parent's
// cancellation: the wait for a lock ends when it is held, the lease lives on.
// It returns an error wrapping ErrNotHeld when the hold has ended.
func (h *Hold) NewLease(parent context.Context, token uint64) (*Lease, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != held {
		return nil, fmt.Errorf("%w: %s", ErrNotHeld, h.cfg.Name)
	}
	h.leases++
	l := &Lease{hold: h, token: token, parent: parent}
	if h.cfg.Observer != nil {
		l.since = time.Now()
	}
	return l, nil
}

// leaseContext is a Lease's context before its own cancellation: the hold's
// context (cancellation, no deadline) with the values of the context the lease
// was acquired with. Because Value finds the hold's cancelCtx first, a context
// derived from it is cancelled with the hold without a goroutine to watch it.
type leaseContext struct {
	context.Context
	lease *Lease
}

func (c *leaseContext) Value(key any) any {
	if _, ok := key.(leaseKey); ok {
		return c
	}
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.lease.parent.Value(key)
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
	h.stopTimer()
	if h.cancel != nil {
		h.cancel(cause)
	}
	// From here Lost() made afresh returns a closed channel; one made
	// before is closed below.
	ch, k := h.lost, h.keeper
	h.mu.Unlock()
	if k != nil {
		k.forget(h)
	}
	h.observe(Event{Kind: Lost, Held: time.Since(h.since), Err: cause})
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
	if h.cfg.Renew == nil {
		why = "the lease time ran out"
	}
	h.Lose(fmt.Errorf("%w: %s: %s", ErrLost, h.cfg.Name, why))
}

// confirm moves the deadline after a renewal sent at sent was confirmed.
func (h *Hold) confirm(sent time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state == held && h.timer != nil {
		h.deadline = sent.Add(h.cfg.TTL - drift(h.cfg.TTL))
		h.timer.Reset(time.Until(h.deadline))
	}
}

// renewed reports a confirmed renewal to the observer.
func (h *Hold) renewed(took time.Duration) { h.observe(Event{Kind: Renewed, Took: took}) }

func (h *Hold) stopTimer() {
	if h.timer != nil {
		h.timer.Stop()
	}
}

// release gives up one Lease's share of the hold. The last Lease gives up
// every hold of the owner in Redis, so a hold count left too high by an
// attempt whose reply was lost cannot keep the lock.
func (h *Hold) release(ctx context.Context) error {
	h.mu.Lock()
	h.leases--
	if h.state == lost {
		err := h.err
		h.mu.Unlock()
		return fmt.Errorf("%w: %s: %w", ErrNotHeld, h.cfg.Name, err)
	}
	last := h.leases == 0
	k := h.keeper
	if last {
		h.stopTimer()
	}
	h.mu.Unlock()
	if last && k != nil {
		// Stop renewing first: a renewal that runs after the release would
		// report the owner gone.
		k.forget(h)
	}

	err := h.releaseRetrying(ctx, last)
	if errors.Is(err, ErrNotHeld) {
		// Redis says the owner held nothing: the lease ran out before we knew.
		cause := fmt.Errorf("%w: %s: not held in Redis at release", ErrLost, h.cfg.Name)
		h.Lose(cause)
		return fmt.Errorf("%w: %s: %w", ErrNotHeld, h.cfg.Name, cause)
	}
	if last {
		h.mu.Lock()
		if h.state == held {
			h.state = released
			if h.cancel != nil {
				h.cancel(errReleased)
			}
		}
		h.mu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("lease: %s: release: %w", h.cfg.Name, err)
	}
	return nil
}

// releaseRetrying runs the release until Redis answers, retrying transport
// errors with backoff under one request id, for at most the lease time (after
// which Redis has let the lock go anyway) or until ctx ends.
//
// Giving up every hold is answered "not held" when repeated. After a try
// whose outcome is unknown, that answer means the try did release, provided
// the lease could not have run out yet: before the local deadline only the
// owner (or an operator's force release) can remove its hold. Giving up one
// hold of several is made idempotent by the script's latch instead.
func (h *Hold) releaseRetrying(ctx context.Context, all bool) error {
	id := NewRequestID()
	err := h.cfg.Release(ctx, id, all)
	if err == nil || errors.Is(err, ErrNotHeld) || ctx.Err() != nil {
		return err
	}
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 20 * time.Millisecond
	b.MaxInterval = time.Second
	b.MaxElapsedTime = h.cfg.TTL
	return backoff.Retry(func() error {
		err := h.cfg.Release(ctx, id, all)
		if errors.Is(err, ErrNotHeld) && all && h.beforeDeadline() {
			return nil // an earlier try released it
		}
		if err != nil && !errors.Is(err, ErrNotHeld) && ctx.Err() == nil {
			return err
		}
		return backoff.Permanent(err)
	}, backoff.WithContext(b, ctx))
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

// errReleased is the cause of a Lease's context after Release.
var errReleased = fmt.Errorf("%w: released", ErrNotHeld)
