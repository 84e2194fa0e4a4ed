// Package engine is the acquisition loop shared by the lock packages: one
// attempt, then waiting on the hub (unlock message, invalidation, the
// holder's remaining TTL, ctx) between attempts, never on a fixed interval;
// reentrancy through the context; the hold handed to the keeper; futures.
package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/event"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/script"
)

// Lock is one lock of one kind on one name. The lock packages fill it in and
// forward Acquire, TryAcquire and AcquireAsync to it.
type Lock struct {
	Client *leasehold.Client
	Name   string
	// Scope tells lock kinds apart for reentrancy (a comparable value per kind).
	Scope  any
	Config leasehold.LockConfig

	// Channel is where a release is published; WaitChannel, when set, gives
	// each owner its own channel instead (fairqueue wakes only the head).
	Channel     string
	WaitChannel func(owner string) string
	// Key is the lock key, whose invalidation wakes waiters; "" for none.
	Key string

	// Try makes one attempt for owner with lease ttl.
	Try func(ctx context.Context, owner string, ttl time.Duration) (script.Grant, error)
	// Release gives up one hold of owner, or all; it returns an error
	// wrapping lease.ErrNotHeld when owner held nothing.
	Release func(ctx context.Context, owner, requestID string, all bool) error
	// Renewal is the keeper's renewal of owner's watchdog lease.
	Renewal func(owner string, ttl time.Duration) *lease.Renewal
	// Abandon, when set, undoes what an owner that stops waiting leaves
	// behind besides a hold (fairqueue: its place in the queue).
	Abandon func(ctx context.Context, owner string) error
	// OwnerFrom, when set, picks the owner of a fresh acquisition from ctx
	// (rw: a read lock taken under a write lease uses the writer's owner).
	OwnerFrom func(ctx context.Context) (string, bool)
}

// Check reports bad input (a nil client, an empty name, an invalid option)
// and a closed Client.
func (l *Lock) Check() error {
	switch {
	case l.Client == nil:
		return fmt.Errorf("%w: nil client", lease.ErrInvalid)
	case l.Name == "":
		return fmt.Errorf("%w: empty lock name", lease.ErrInvalid)
	case l.Config.Err != nil:
		return fmt.Errorf("%w (lock %q)", l.Config.Err, l.Name)
	case l.Client.Redis().Mode() == rueidis.ClientModeCluster && !oneSlot(l.Name):
		// rueidis would panic building a script call whose keys lie in
		// different slots; Redis would refuse it with CROSSSLOT.
		return fmt.Errorf("%w: lock name %q cannot be used in Redis Cluster: its braces make no hash tag, "+
			"so the keys derived from it lie in other slots; use a name with a non-empty {tag}, or no '}'", lease.ErrInvalid, l.Name)
	}
	if err := l.Client.Err(); err != nil {
		return fmt.Errorf("%w (lock %s)", err, l.Name)
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
	tag := hashed(name)
	return hashed(script.Prefixed("p", name)) == tag && hashed(script.Suffixed(name, "s")) == tag
}

// hashed is the part of key that Redis Cluster hashes to find its slot: what
// the first '{' and the first '}' after it enclose, when that is not empty;
// else the whole key.
func hashed(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// Acquire blocks until the lock is held or ctx is done. On failure it returns
// an error naming the lock (wrapping ctx.Err() when ctx ended) and holds
// nothing.
func (l *Lock) Acquire(ctx context.Context) (*lease.Lease, error) { return l.acquire(ctx, true) }

// TryAcquire makes one attempt: an error wrapping lease.ErrNotAcquired when
// another owner holds the lock.
func (l *Lock) TryAcquire(ctx context.Context) (*lease.Lease, error) { return l.acquire(ctx, false) }

// AcquireAsync starts Acquire in a goroutine the Client waits for on Close.
func (l *Lock) AcquireAsync(ctx context.Context) *lease.Future {
	f, run := lease.NewFuture(ctx, l.Acquire)
	if l.Client == nil || !l.Client.Go(run) {
		run() // fails at once: invalid, or the Client is closed
	}
	return f
}

func (l *Lock) acquire(ctx context.Context, wait bool) (*lease.Lease, error) {
	if o := l.Config.Observer; o != nil {
		start := time.Now()
		ls, err := l.acquireUnobserved(ctx, wait)
		e := lease.Event{Kind: lease.Acquired, Name: l.Name, Waited: time.Since(start), Err: err}
		if ls != nil {
			e.Owner, e.Token = ls.Owner(), ls.Token()
		} else {
			e.Kind = lease.Abandoned
		}
		o.Observe(e)
		return ls, err
	}
	return l.acquireUnobserved(ctx, wait)
}

func (l *Lock) acquireUnobserved(ctx context.Context, wait bool) (*lease.Lease, error) {
	if err := l.Check(); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, l.ctxErr(ctx, nil)
	}
	if h := lease.HoldFrom(ctx, l.Scope, l.Name); h != nil {
		return l.reenter(ctx, h)
	}
	owner := l.owner(ctx)
	ls, g, err := l.attempt(ctx, owner)
	if ls != nil || (err != nil && !transient(err)) {
		return ls, err
	}
	if !wait {
		if err != nil {
			return nil, fmt.Errorf("lease: %s: %w", l.Name, err)
		}
		return nil, fmt.Errorf("%w: %s", lease.ErrNotAcquired, l.Name)
	}
	if err != nil {
		owner = l.owner(ctx) // the first is being undone: see attempt
	}
	return l.wait(ctx, owner, g, err)
}

// owner picks the owner of a fresh acquisition.
func (l *Lock) owner(ctx context.Context) string {
	if l.OwnerFrom != nil {
		if o, ok := l.OwnerFrom(ctx); ok {
			return o
		}
	}
	return l.Client.NewOwner()
}

// wait runs attempts until one holds the lock, each after a wake-up, the
// holder's remaining TTL, or a backoff after a Redis error.
func (l *Lock) wait(ctx context.Context, owner string, g script.Grant, err error) (*lease.Lease, error) {
	w, werr := l.watch(owner)
	if werr != nil {
		return nil, werr
	}
	held, passOn := false, false
	defer func() {
		if !held {
			l.abandon(owner)
		}
		if w != nil {
			w.Leave(!held && passOn)
		}
	}()

	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 10 * time.Millisecond
	b.MaxInterval = time.Second
	b.MaxElapsedTime = 0
	timer := time.NewTimer(l.pause(g, err, b))
	defer timer.Stop()
	ready := w.Ready()
	lastErr := err
	for {
		select {
		case <-ctx.Done():
			return nil, l.ctxErr(ctx, lastErr)
		case <-l.Client.Context().Done():
			return nil, l.Check()
		case <-ready:
			// Subscribed: releases from now on will be heard, but one may
			// have slipped in since the last attempt, so try once more.
			ready = nil
		case <-w.C():
		case <-timer.C:
		}
		ls, g, err := l.attempt(ctx, owner)
		switch {
		case ls != nil:
			held = true
			return ls, nil
		case err != nil && !transient(err):
			return nil, err
		case err != nil && ctx.Err() != nil:
			passOn = true // our attempt may have been the one a wake-up was for
			return nil, l.ctxErr(ctx, err)
		case err != nil:
			lastErr = err
			// The undo of that attempt releases whatever its owner holds,
			// so a later attempt under the same owner could win a lock
			// the undo then frees: go on under a new owner. (A fair
			// lock's waiter so rejoins the queue at its tail.)
			owner = l.owner(ctx)
			if l.WaitChannel != nil {
				w.Leave(false)
				if w, werr = l.watch(owner); werr != nil {
					w = nil
					return nil, werr
				}
				ready = w.Ready()
			}
		default:
			b.Reset()
			lastErr = nil
			// Track errors are not fatal: the TTL timer still runs.
			_ = w.Track(ctx)
		}
		timer.Reset(l.pause(g, err, b))
	}
}

// watch registers a waiter for owner's wake-ups.
func (l *Lock) watch(owner string) (*event.Waiter, error) {
	channel := l.Channel
	if l.WaitChannel != nil {
		channel = l.WaitChannel(owner)
	}
	w, err := l.Client.Hub().Watch(channel, l.Key)
	if err != nil {
		return nil, l.Check()
	}
	return w, nil
}

// pause is how long to wait for a wake-up before trying again: the holder's
// remaining lease, or a backoff after an error.
func (l *Lock) pause(g script.Grant, err error, b backoff.BackOff) time.Duration {
	switch {
	case err != nil:
		return b.NextBackOff()
	case g.Wait > 0:
		// The lease was measured at the server before the reply travelled:
		// the timer fires no earlier than the key expires.
		return g.Wait + time.Millisecond
	default:
		// No expiry known (a key without TTL): wait for a message, but not
		// for ever.
		return l.Config.TTL()
	}
}

// attempt makes one try for owner and turns a success into a Lease. After a
// try whose outcome is unknown (a transport error), the owner belongs to the
// undo running in the background: the caller must not try under it again.
func (l *Lock) attempt(ctx context.Context, owner string) (*lease.Lease, script.Grant, error) {
	ttl := l.Config.TTL()
	sent := time.Now()
	g, err := l.Try(ctx, owner, ttl)
	if err != nil {
		if transient(err) {
			// The script may have run though its reply was lost: undo
			// whatever it may have taken, without making the caller wait.
			l.cleanup(owner)
		}
		return nil, g, err
	}
	if !g.Acquired {
		return nil, g, nil
	}
	if l.Config.Replicas > 0 {
		if err := l.replicate(ctx, owner, ttl); err != nil {
			l.releaseNow(owner)
			return nil, g, err
		}
	}
	h := lease.NewHold(lease.HoldConfig{
		Name:     l.Name,
		Owner:    owner,
		Scope:    l.Scope,
		TTL:      ttl,
		Observer: l.Config.Observer,
		Renew:    l.renewal(owner, ttl),
		Release: func(ctx context.Context, id string, all bool) error {
			return l.Release(ctx, owner, id, all)
		},
	})
	if err := l.Client.Keeper().Track(h, sent); err != nil {
		l.releaseNow(owner)
		return nil, g, err
	}
	ls, err := h.NewLease(ctx, g.Token)
	if err != nil {
		// The hold ended since Track: the Client closed, or the local
		// deadline passed before the acquisition returned (it took longer
		// than the lease less its drift margin).
		cause := h.Err()
		if errors.Is(cause, lease.ErrClosed) {
			return nil, g, cause
		}
		return nil, g, fmt.Errorf("%w: %s: the lease (%v) ran out before the acquisition returned: %w", lease.ErrNotAcquired, l.Name, ttl, cause)
	}
	return ls, g, nil
}

// replicate waits until Config.Replicas replicas have owner's new hold
// (WithReplicas), and returns an error wrapping leasehold.ErrNotReplicated
// when fewer acknowledge it in time. WAIT counts the writes of the
// connection it runs on, and rueidis runs WAIT, a blocking command, on a
// dedicated connection rather than the one that ran the acquire script. So
// the hold is written once more on that connection, by the renewal script
// (which only re-applies the lease), and WAIT follows it in one pipeline:
// replicas apply the primary's writes in order, so one that acknowledges the
// renewal has the acquisition too.
func (l *Lock) replicate(ctx context.Context, owner string, ttl time.Duration) error {
	n, timeout := l.Config.Replicas, l.Config.ReplicaTimeout
	if l.Renewal == nil {
		return fmt.Errorf("%w: %s: %w: the lock has no renewal script to wait on", lease.ErrNotAcquired, l.Name, leasehold.ErrNotReplicated)
	}
	r := l.Renewal(owner, ttl)
	rc := l.Client.Redis()
	// EVAL, not EVALSHA: after a NOSCRIPT (a new primary after a failover
	// has no scripts) the WAIT pipelined behind it would wait for nothing,
	// and the renewal sent after it could come too late.
	res := rc.DoMulti(ctx, r.Script.Eval(rc, r.Keys, r.Args), rc.B().Wait().Numreplicas(int64(n)).Timeout(max(timeout.Milliseconds(), 1)).Build())
	held, err := res[0].AsInt64()
	if err == nil && held != 1 {
		err = errors.New("the lease ran out before the replicas were asked")
	}
	acked := int64(0)
	if err == nil {
		acked, err = res[1].AsInt64()
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %w: %v", lease.ErrNotAcquired, l.Name, leasehold.ErrNotReplicated, err)
	}
	if acked < int64(n) {
		return fmt.Errorf("%w: %s: %w: %d of %d replicas acknowledged the acquisition within %v; released",
			lease.ErrNotAcquired, l.Name, leasehold.ErrNotReplicated, acked, n, timeout)
	}
	return nil
}

func (l *Lock) renewal(owner string, ttl time.Duration) *lease.Renewal {
	if !l.Config.Renewed() || l.Renewal == nil {
		return nil
	}
	return l.Renewal(owner, ttl)
}

// reenter takes the lock again for the owner of h, a hold the caller's
// context carries.
func (l *Lock) reenter(ctx context.Context, h *lease.Hold) (*lease.Lease, error) {
	g, err := l.Try(ctx, h.Owner(), l.Config.TTL())
	if err != nil {
		return nil, fmt.Errorf("lease: %s: reentrant acquire: %w", l.Name, err)
	}
	if !g.Acquired {
		cause := fmt.Errorf("%w: %s: reentrant acquire found the lock held by another owner", lease.ErrLost, l.Name)
		h.Lose(cause)
		return nil, cause
	}
	return h.NewLease(ctx, g.Token)
}

// cleanup undoes, in the background, an attempt whose outcome is unknown.
func (l *Lock) cleanup(owner string) {
	l.Client.Go(func() {
		ctx, cancel := context.WithTimeout(l.Client.Context(), l.Config.TTL())
		defer cancel()
		l.undo(ctx, owner)
	})
}

// releaseNow undoes a won attempt that cannot be kept, before returning.
func (l *Lock) releaseNow(owner string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l.undo(ctx, owner)
}

// abandon undoes what a waiter leaves behind besides a hold (its place in a
// queue), in the background.
func (l *Lock) abandon(owner string) {
	if l.Abandon == nil {
		return
	}
	l.Client.Go(func() {
		ctx, cancel := context.WithTimeout(l.Client.Context(), l.Config.TTL())
		defer cancel()
		retry(ctx, func() error { return l.Abandon(ctx, owner) })
	})
}

func (l *Lock) undo(ctx context.Context, owner string) {
	if l.Abandon != nil {
		retry(ctx, func() error { return l.Abandon(ctx, owner) })
	}
	id := lease.NewRequestID()
	retry(ctx, func() error {
		if err := l.Release(ctx, owner, id, true); !errors.Is(err, lease.ErrNotHeld) {
			return err
		}
		return nil
	})
}

// retry runs op until it succeeds or ctx ends, backing off between tries.
func retry(ctx context.Context, op func() error) {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 20 * time.Millisecond
	b.MaxInterval = time.Second
	b.MaxElapsedTime = 0
	_ = backoff.Retry(op, backoff.WithContext(b, ctx))
}

// transient reports whether err may pass: a transport failure or a context
// ending, after which the script may or may not have run. A Redis error reply
// (a script error, WRONGTYPE) is not transient, nor are replicas that did not
// acknowledge an acquisition (it was released; waiting would not bring them).
func transient(err error) bool {
	if err == nil {
		return false
	}
	if _, ok := rueidis.IsRedisErr(err); ok {
		return false
	}
	return !errors.Is(err, lease.ErrInvalid) && !errors.Is(err, lease.ErrClosed) &&
		!errors.Is(err, leasehold.ErrNotReplicated)
}

// ctxErr is the error of an acquisition whose ctx ended: it wraps ctx.Err()
// and names the lock, and the last attempt's error if there was one.
func (l *Lock) ctxErr(ctx context.Context, last error) error {
	if last != nil && !errors.Is(last, ctx.Err()) {
		return fmt.Errorf("lease: %s: %w (last attempt: %v)", l.Name, ctx.Err(), last)
	}
	return fmt.Errorf("lease: %s: %w", l.Name, ctx.Err())
}
