// Package engine is the acquisition loop shared by the lock packages. Each
// lock kind is a lua.Protocol (its scripts); the Engine serves Acquire,
// TryAcquire and AcquireAsync over it: one attempt, then waiting on the hub
// (unlock message, invalidation, the holder's remaining TTL, ctx) between
// attempts, never on a fixed interval; reentrancy through the context; the
// hold handed to the keeper; futures; and every failure as a *lease.Error.
package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/core"
	"github.com/leasehold/leasehold/internal/handoff"
	"github.com/leasehold/leasehold/internal/hub"
	"github.com/leasehold/leasehold/internal/keyslot"
	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/internal/retry"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/script"
)

// The operations an Engine reports in its errors.
const (
	opAcquire    = "acquire"
	opTryAcquire = "try-acquire"
)

// Engine is one lock of one kind on one name: the lua.Protocol of its kind,
// run on a Client. The lock packages embed it and declare the methods users call.
type Engine struct {
	client *core.Client // nil when the lock was made with a nil Client
	name   string
	key    string     // name in Redis: the Client's key prefix, then name
	scope  core.Scope // leases re-enter locks of the same scope and name
	cfg    core.LockConfig
	proto  lua.Protocol
	clock  clock
	watch  watcher
	// reentrant is the protocol's Reentrant.
	reentrant bool
	// watchOpts register its waiters with the hub (the protocol's weight,
	// when its channel carries counts).
	watchOpts []hub.WatchOption
	// pass lets a release pass the lock to a waiter of the same Client
	// (lua.Handoff), and such waiters stand in the lock's line with
	// leaseMs; nil where the kind cannot, or the lock must not (see passes).
	pass    *core.Passing
	leaseMs string
	// wanter leaves the marks of waiters that do not listen (lua.Wanter);
	// nil where the lock is never passed. tried is when a TryAcquire last
	// failed (unix ns; 0 after one won): the next one, if it fails, says
	// it will be back after as long.
	wanter lua.Wanter
	tried  atomic.Int64
}

// New returns the engine of the lock name on c, of the kind p, configured by
// cfg. Leases re-enter only locks of the same kind and Client and name. c may
// be nil: every call then fails with lease.ErrInvalid.
func New(c *core.Client, name string, cfg core.LockConfig, p lua.Protocol) *Engine {
	is := p.Is()
	e := &Engine{client: c, name: name, key: cfg.Key(name), scope: core.Scope{Client: c, Kind: is.Kind}, cfg: cfg, proto: p, clock: realClock{}, reentrant: is.Kind.Reentrant}
	if w := is.Weight; w > 0 {
		e.watchOpts = []hub.WatchOption{hub.Counted(w)}
	}
	if c != nil {
		e.watch = hubWatcher{c.Hub()}
		if to, ok := p.(lua.Handoff); ok && passes(c, cfg) {
			ch, _ := p.Wakeup("")
			e.pass, e.leaseMs = &core.Passing{Client: c, Channel: ch, To: to}, lua.Ms(cfg.TTL())
			e.wanter, _ = p.(lua.Wanter)
		}
	}
	return e
}

// passes reports whether a lock of cfg on c may be passed from a release to
// a waiter of c in one script: not when a release must leave it kept
// (WithHoldAtLeast) or replicas must acknowledge each acquisition, nor in a
// Redis Cluster whose messages are classic PUBLISH, whose count of a
// channel's subscribers is the node's own alone.
func passes(c *core.Client, cfg core.LockConfig) bool {
	rc := c.Redis()
	return cfg.Err == nil && cfg.HoldAtLeast <= 0 && cfg.Replicas <= 0 && rc != nil &&
		(rc.Mode() != rueidis.ClientModeCluster || c.Options().Sharded)
}

// Name is the lock name.
func (e *Engine) Name() string { return e.name }

// clients is the Client the lock runs on, for locks made of other locks
// (see Group).
func (e *Engine) clients() []*core.Client {
	if e.client == nil {
		return nil
	}
	return []*core.Client{e.client}
}

// Check reports bad input (a nil client, an empty name, an invalid option)
// and a closed Client, as the error of operation op.
func (e *Engine) Check(op string) error {
	fail := func(format string, args ...any) error { return core.Errorf(op, e.name, format, args...) }
	switch {
	case e.client == nil:
		return fail("%w: nil client", lease.ErrInvalid)
	case e.name == "":
		return fail("%w: empty lock name", lease.ErrInvalid)
	case e.cfg.Err != nil:
		return fail("%w", e.cfg.Err)
	case e.client.Redis() != nil && e.client.Redis().Mode() == rueidis.ClientModeCluster && !oneSlot(e.key):
		// rueidis would panic building a script call whose keys lie in
		// different slots; Redis would refuse it with CROSSSLOT.
		return fail("%w: the name cannot be used in Redis Cluster: its braces make no hash tag, "+
			"so the keys derived from it lie in other slots; use a name with a non-empty {tag}, or no '}'", lease.ErrInvalid)
	}
	if err := e.client.Err(); err != nil {
		return fail("%w", err)
	}
	return nil
}

// oneSlot reports whether every key derived from the lock name (prefix:{NAME}
// or prefix:NAME, {NAME}:suffix or NAME:suffix, as Redisson derives them)
// hashes to the Redis Cluster slot of name itself. It does not for a name
// with braces but no hash tag in them that also holds a '}' ("a{}b", "x}y"),
// nor for one with a '{' and no tag ("a{b"), since its derived keys keep the
// name out of braces. Those names work on a single Redis, not on a cluster.
func oneSlot(name string) bool {
	tag := keyslot.Hashed(name)
	// Every derived key is of Token's form (prefix:{NAME}) or Leader's
	// ({NAME}:suffix), an id appended or not.
	k := script.KeysOf(name)
	return keyslot.Hashed(k.Token) == tag && keyslot.Hashed(k.Leader) == tag
}

// Acquire blocks until the lock is held or ctx is done. On failure it returns
// a *lease.Error (wrapping ctx.Err() when ctx ended) and holds nothing.
func (e *Engine) Acquire(ctx context.Context) (*lease.Lease, error) {
	return e.observed(ctx, opAcquire, true)
}

// TryAcquire makes one attempt: a *lease.Error wrapping lease.ErrNotAcquired
// when another owner holds the lock.
func (e *Engine) TryAcquire(ctx context.Context) (*lease.Lease, error) {
	return e.observed(ctx, opTryAcquire, false)
}

// AcquireAsync starts Acquire in a goroutine the Client waits for on Close,
// which ends its attempts when Close's time is up (see bound).
func (e *Engine) AcquireAsync(ctx context.Context) *lease.Future {
	if e.client == nil {
		f, run := core.NewFuture(ctx, e.Acquire)
		run() // fails at once: no client
		return f
	}
	ctx, stop := bound(ctx, e.clients())
	f, run := core.NewFuture(ctx, e.Acquire)
	if !goJoined(e.clients(), func() { defer stop(); run() }) {
		run() // fails at once: the Client is closed
		stop()
	}
	return f
}

// call is one Acquire or TryAcquire: its ctx, the operation its errors
// name, whether it waits, and how many attempts it made (for the observer).
type call struct {
	ctx      context.Context
	op       string
	wait     bool
	attempts int
}

func (e *Engine) observed(ctx context.Context, op string, wait bool) (*lease.Lease, error) {
	c := &call{ctx: ctx, op: op, wait: wait}
	o := e.cfg.Observer
	if o == nil {
		return e.acquire(c)
	}
	start := time.Now()
	ls, err := e.acquire(c)
	ev := lease.Event{Kind: lease.Acquired, Lock: e.proto.Is().Kind.Name, Name: e.name, Waited: time.Since(start), Err: err,
		Context: ctx, Attempts: c.attempts}
	if ls != nil {
		ev.Owner, ev.Token = ls.Owner(), ls.Token()
	} else {
		ev.Kind = lease.Abandoned
	}
	o.Observe(ev)
	return ls, err
}

func (e *Engine) acquire(c *call) (*lease.Lease, error) {
	if err := e.Check(c.op); err != nil {
		return nil, err
	}
	if c.ctx.Err() != nil {
		return nil, e.ctxErr(c.ctx, c.op, nil)
	}
	if h := e.held(c.ctx); h != nil {
		c.attempts++
		return e.reenter(c.ctx, c.op, h)
	}
	owner := e.client.NewOwner()
	var mark hub.Mark
	if c.wait {
		// Taken before the attempt: a release after it is either heard by
		// then or wakes the waiter registered below (see wait).
		mark = e.watch.Mark(e.channel(owner))
		if e.pass != nil && (e.pass.Held() || mark.Queued()) {
			// A hold of this lock on this Client: the attempt would fail.
			// Its release passes the lock to a waiter or publishes, and
			// a release since the mark makes the waiter try on Ready.
			// Waiters of this Client on it: the lock is held, or one of
			// them has been woken to take it; this Acquire waits behind
			// them, woken in its turn, rather than try past them.
			return e.wait(c, owner, mark, lua.Grant{}, nil)
		}
	}
	c.attempts++
	want := e.want(c.wait)
	ls, g, err := e.attempt(c.ctx, c.op, owner, c.wait, want)
	if e.pass != nil && !c.wait {
		e.tryOutcome(ls != nil, err)
	}
	if ls != nil && e.pass != nil {
		// A turn of this Client on the lock begins.
		e.client.Lines().Won(e.pass.Channel)
	}
	if ls != nil || (err != nil && !retry.Transient(err)) {
		return ls, err
	}
	if !c.wait {
		if err != nil {
			return nil, core.RedisErr(c.op, e.name, err)
		}
		return nil, core.Errorf(c.op, e.name, "%w", lease.ErrNotAcquired)
	}
	if retry.Classify(err) == retry.Unknown {
		owner = e.client.NewOwner() // the first is being undone: see attempt
	}
	return e.wait(c, owner, mark, g, err)
}

// want is how long until the next TryAcquire, for a TryAcquire's attempt
// on a lock that may be passed: as long as since the last one, which
// failed, when that is at most handoff.MaxDelay; else 0, no mark (see
// handoff.Want).
func (e *Engine) want(wait bool) time.Duration {
	if wait || e.wanter == nil {
		return 0
	}
	last := e.tried.Load()
	if last == 0 {
		return 0
	}
	if d := time.Duration(time.Now().UnixNano() - last); d > 0 && d <= handoff.MaxDelay {
		return d
	}
	return 0
}

// tryOutcome records a TryAcquire's outcome for the next one's mark.
func (e *Engine) tryOutcome(won bool, err error) {
	switch {
	case won:
		e.tried.Store(0)
	case err == nil:
		e.tried.Store(time.Now().UnixNano())
	}
}

// held is the hold of this lock that ctx carries, for a re-entry: nil when
// it carries none or the protocol is not Reentrant.
func (e *Engine) held(ctx context.Context) *core.Hold {
	if !e.reentrant {
		return nil
	}
	return core.HoldFrom(ctx, e.scope, e.name)
}

func (e *Engine) channel(owner string) string {
	ch, _ := e.proto.Wakeup(owner)
	return ch
}

// register registers a waiter for owner's wake-ups.
func (e *Engine) register(op, owner string) (waiter, error) {
	ch, key := e.proto.Wakeup(owner)
	w, err := e.watch.Watch(ch, key, e.watchOpts...)
	if err != nil {
		if cerr := e.Check(op); cerr != nil {
			return nil, cerr
		}
		return nil, core.Errorf(op, e.name, "%w", err)
	}
	return w, nil
}

// untold is the pause of a waiter that is told when to try again: longer
// than any wait, its timer only a formality.
const untold = 1<<63 - 1

// pause is how long to wait for a wake-up before trying again: the holder's
// remaining lease, or a backoff after an error.
func (e *Engine) pause(g lua.Grant, err error, b backoff.BackOff) time.Duration {
	switch {
	case err != nil:
		return b.NextBackOff()
	case g.Told:
		// Told when to try again (see lua.Grant): no timer.
		return untold
	case g.Wait > 0:
		// The lease was measured at the server before the reply travelled:
		// the timer fires no earlier than the key expires.
		return g.Wait + time.Millisecond
	default:
		// No expiry known (a key without TTL): wait for a message, but not
		// for ever.
		return e.cfg.TTL()
	}
}

// attempt makes one try for owner and turns a success into a Lease. With
// want, the try of a waiter that does not listen leaves its mark if it
// fails, saying it tries again in want (see handoff.Want). After a try
// whose outcome is unknown (a transport error), the owner belongs to the
// undo running in the background: the caller must not try under it again.
func (e *Engine) attempt(ctx context.Context, op, owner string, wait bool, want time.Duration) (*lease.Lease, lua.Grant, error) {
	ttl := e.cfg.TTL()
	sent := time.Now()
	var g lua.Grant
	var err error
	if want > 0 && e.wanter != nil {
		delay, margin := handoff.Want(want, ttl)
		g, err = e.wanter.TryWanting(ctx, e.client.Redis(), owner, delay, margin)
	} else {
		g, err = e.proto.Try(ctx, e.client.Redis(), owner, wait)
	}
	if err != nil {
		switch retry.Classify(err) {
		case retry.Unknown:
			// The script may have run though its reply was lost: undo
			// whatever it may have taken, without making the caller wait.
			e.cleanup(owner)
			return nil, g, err
		case retry.Pause:
			return nil, g, err // it did not run: nothing to undo
		}
		return nil, g, core.RedisErr(op, e.name, err)
	}
	if !g.Acquired {
		return nil, g, nil
	}
	var won time.Time // when the acquisition's reply came: WithHoldAtLeast counts from it
	if e.cfg.HoldAtLeast > 0 {
		won = time.Now()
	}
	if e.cfg.Replicas > 0 {
		if err := e.replicate(ctx, op, owner); err != nil {
			e.releaseBefore(ctx, owner)
			return nil, g, err
		}
	}
	h := core.NewHold(core.HoldConfig{
		Name:     e.name,
		Kind:     e.proto.Is().Kind.Name,
		Owner:    owner,
		Scope:    e.scope,
		TTL:      ttl,
		Observer: e.cfg.Observer,
		Renewed:  e.cfg.Renewed(),
		Presence: e.proto.Presence(owner),
		Protocol: e.proto, Redis: e.client.Redis(),
		HoldAtLeast: e.cfg.HoldAtLeast, Won: won,
		Pass: e.pass,
	})
	if err := e.client.Keeper().Track(h, sent); err != nil {
		e.releaseBefore(ctx, owner)
		return nil, g, err
	}
	ls, err := h.NewLease(ctx, g.Token)
	if err != nil {
		// The hold ended since Track: the Client closed, or the local
		// deadline passed before the acquisition returned (it took longer
		// than the lease less its drift margin).
		cause := h.Err()
		if errors.Is(cause, lease.ErrClosed) {
			return nil, g, core.Errorf(op, e.name, "%w", lease.ErrClosed)
		}
		return nil, g, core.Errorf(op, e.name, "%w: the lease (%v) ran out before the acquisition returned: %w",
			lease.ErrNotAcquired, ttl, cause)
	}
	return ls, g, nil
}

// adopt turns a lock passed to owner, a waiter of this lock, by a release of
// the same Client (see lua.Handoff) into a Lease, as attempt turns a won
// attempt into one. On failure the lock is given back.
func (e *Engine) adopt(ctx context.Context, op, owner string, g handoff.Pass) (*lease.Lease, error) {
	h := core.NewHold(core.HoldConfig{
		Name:     e.name,
		Kind:     e.proto.Is().Kind.Name,
		Owner:    owner,
		Scope:    e.scope,
		TTL:      e.cfg.TTL(),
		Observer: e.cfg.Observer,
		Renewed:  e.cfg.Renewed(),
		Presence: e.proto.Presence(owner),
		Protocol: e.proto, Redis: e.client.Redis(),
		Pass: e.pass,
	})
	if err := e.client.Keeper().Track(h, g.Sent); err != nil {
		e.releaseBefore(ctx, owner)
		return nil, err
	}
	ls, err := h.NewLease(ctx, g.Token)
	if err != nil {
		e.releaseBefore(ctx, owner)
		if errors.Is(h.Err(), lease.ErrClosed) {
			return nil, core.Errorf(op, e.name, "%w", lease.ErrClosed)
		}
		return nil, core.Errorf(op, e.name, "%w: the lease ran out before the lock was passed on: %w",
			lease.ErrNotAcquired, h.Err())
	}
	return ls, nil
}

// release runs the protocol's release, leaving the lock kept for keep if it
// frees it, and turns "not held" into an error wrapping lease.ErrNotHeld.
func (e *Engine) release(ctx context.Context, owner, id string, all bool, keep time.Duration) error {
	n, err := e.proto.Release(ctx, e.client.Redis(), owner, id, all, keep)
	switch {
	case err != nil && !retry.Transient(err):
		return core.RedisErr("release", e.name, err)
	case err != nil:
		return err
	case n == lua.NotHeld:
		return lease.ErrNotHeld
	}
	return nil
}

// replicate waits until cfg.Replicas replicas have owner's new hold
// (WithReplicas), and returns an error wrapping lease.ErrNotReplicated when
// fewer acknowledge it in time. WAIT counts the writes of the connection it
// runs on, and rueidis runs WAIT, a blocking command, on a dedicated
// connection rather than the one that ran the acquire script. So the hold is
// written once more on that connection, by the renewal script (which only
// re-applies the lease), and WAIT follows it in one pipeline: replicas apply
// the primary's writes in order, so one that acknowledges the renewal has the
// acquisition too. The connection is a dedicated one to the node of the
// lock's slot (rueidis' Dedicate binds it to the slot of its first command),
// so in Redis Cluster WAIT runs where the lock is.
func (e *Engine) replicate(ctx context.Context, op, owner string) error {
	n, timeout := e.cfg.Replicas, e.cfg.ReplicaTimeout
	fail := func(format string, args ...any) error {
		return core.Errorf(op, e.name, "%w: %w: "+format, append([]any{lease.ErrNotAcquired, lease.ErrNotReplicated}, args...)...)
	}
	r := e.proto.Renewal(owner)
	if r == nil {
		return fail("the lock has no renewal script to wait on")
	}
	rc := e.client.Redis()
	// EVAL, not EVALSHA: after a NOSCRIPT (a new primary after a failover
	// has no scripts) the WAIT pipelined behind it would wait for nothing,
	// and the renewal sent after it could come too late.
	dc, release := rc.Dedicate()
	defer release()
	res := dc.DoMulti(ctx, r.Eval(dc, e.client.Options().Sharded), dc.B().Wait().Numreplicas(int64(n)).Timeout(max(timeout.Milliseconds(), 1)).Build())
	held, err := res[0].AsInt64()
	if err == nil && held != 1 {
		err = errors.New("the lease ran out before the replicas were asked")
	}
	acked := int64(0)
	if err == nil {
		acked, err = res[1].AsInt64()
	}
	if err != nil {
		return fail("%v", err)
	}
	if acked < int64(n) {
		return fail("%d of %d replicas acknowledged the acquisition within %v; released", acked, n, timeout)
	}
	return nil
}

// reenter takes the lock again for the owner of h, a hold the caller's
// context carries.
func (e *Engine) reenter(ctx context.Context, op string, h *core.Hold) (*lease.Lease, error) {
	g, err := e.proto.Try(ctx, e.client.Redis(), h.Owner(), false)
	if err != nil {
		return nil, core.Errorf(op, e.name, "reentrant acquire: %w", core.RedisErr(op, e.name, err))
	}
	if !g.Acquired {
		cause := core.Errorf("hold", e.name, "%w: reentrant acquire found the lock held by another owner", lease.ErrLost)
		h.Lose(cause)
		return nil, core.Errorf(op, e.name, "%w", cause)
	}
	// The hold's token: its leases fence as one holder.
	return h.NewLease(ctx, h.Token())
}

// cleanup undoes, in the background, an attempt whose outcome is unknown.
func (e *Engine) cleanup(owner string) {
	e.client.Go(func() {
		ctx, cancel := context.WithTimeout(e.client.Context(), e.cfg.TTL())
		defer cancel()
		e.undo(ctx, owner)
	})
}

// releaseNow undoes a won attempt that cannot be kept (its replicas did not
// acknowledge it, or the Client is closing). It runs in the background, so
// that Acquire returns by its ctx's deadline while Redis is slow to answer
// (a failover), and Close waits for it, within its own bound; once Close has
// begun it runs before returning, bounded by ReleaseTimeout and Close's.
// The channel it returns is closed once the release has run.
func (e *Engine) releaseNow(owner string) <-chan struct{} {
	done := make(chan struct{})
	undo := func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(e.client.Closing(), core.ReleaseTimeout)
		defer cancel()
		e.undo(ctx, owner)
	}
	if !e.client.Go(undo) {
		undo()
	}
	return done
}

// releaseBefore is releaseNow for an attempt about to report its failure: it
// waits for the release while ctx lasts, so that the failure means nothing is
// held when it is returned, and a Redis slow to answer still does not keep
// the caller past ctx's deadline (the release then finishes in the
// background).
func (e *Engine) releaseBefore(ctx context.Context, owner string) {
	select {
	case <-e.releaseNow(owner):
	case <-ctx.Done():
	}
}

// abandon undoes what a waiter leaves behind besides a hold (its place in a
// queue), in the background, for a kind whose waiters leave something.
func (e *Engine) abandon(owner string) {
	if e.proto.Is().Leaves == nil {
		return
	}
	e.client.Go(func() {
		ctx, cancel := context.WithTimeout(e.client.Context(), e.cfg.TTL())
		defer cancel()
		e.leave(ctx, owner)
	})
}

// leave runs the protocol's Abandon for owner, if it has one, retrying
// pauses until ctx ends.
func (e *Engine) leave(ctx context.Context, owner string) {
	if l := e.proto.Is().Leaves; l != nil {
		_ = retry.Do(ctx, func() error { return l.Abandon(ctx, e.client.Redis(), owner) })
	}
}

func (e *Engine) undo(ctx context.Context, owner string) {
	e.leave(ctx, owner)
	id := core.NewRequestID()
	_ = retry.Do(ctx, func() error {
		if err := e.release(ctx, owner, id, true, 0); !errors.Is(err, lease.ErrNotHeld) {
			return err
		}
		return nil
	})
}

// ctxErr is the error of an acquisition whose ctx ended: one wrapping
// lease.ErrClosed once the Client is closing (which also ends the ctx of an
// AcquireAsync: see bound).
func (e *Engine) ctxErr(ctx context.Context, op string, last error) error {
	if e.client != nil && e.client.Err() != nil {
		return e.Check(op)
	}
	return core.CtxErr(ctx, op, e.name, last)
}
