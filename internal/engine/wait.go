package engine

import (
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/leasehold/leasehold/internal/hub"
	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/internal/retry"
	"github.com/leasehold/leasehold/lease"
)

// waiting is one Acquire's wait for the lock between attempts: the owner it
// tries as, its registration with the hub, and when it tries next. Each
// attempt comes after a wake-up (an unlock message, an invalidation of the
// lock key), the holder's remaining lease, or a backoff after a Redis error;
// never on a fixed interval.
type waiting struct {
	e     *Engine
	c     call // a copy: its attempts count on, and the caller reads them back
	owner string
	w     waiter
	// ready is the subscription's confirmation while one more attempt is
	// due on it (a release may have slipped in before the subscription);
	// nil once that attempt was made or was not needed.
	ready <-chan struct{}
	b     *backoff.ExponentialBackOff
	t     timer
	last  error // the last attempt's error, which a ctx error names
	// poked is signalled (buffer 1) by the keeper when it finds the owner's
	// place gone (a kind whose waiters keep one: see lua.Keep); unkeep
	// stops that keeping. Both nil for other kinds.
	poked  chan struct{}
	unkeep func()
	held   bool // an attempt won: the owner's traces are the lease's now
	passOn bool // the wait ended on a wake-up that may have been ours
	// handoff is the lock a release of the same Client passed the owner,
	// once received.
	handoff *hub.Handoff
}

// wait runs attempts under owner until one holds the lock, c's ctx ends or
// the Client closes, and counts them in c. mark, g and err are the first
// attempt's: the channel's mark taken before it, its grant and its error.
func (e *Engine) wait(c *call, owner string, mark hub.Mark, g lua.Grant, err error) (*lease.Lease, error) {
	// c is copied in, not pointed to: a pointer kept in the waiting state
	// would move every call to the heap, the ones that never wait too.
	s := &waiting{e: e, c: *c, owner: owner, last: err, b: retry.Backoff(10*time.Millisecond, time.Second)}
	defer func() { c.attempts = s.c.attempts }()
	if rerr := s.register(); rerr != nil {
		return nil, rerr
	}
	defer s.stop()
	if err == nil && !s.w.Missed(mark) {
		// The channel was subscribed before the first attempt and nothing
		// has been heard on it since: the release the holder has yet to
		// make will wake us, no second attempt is needed on Ready.
		s.ready = nil
		s.track()
	}
	s.t = e.clock.NewTimer(e.pause(g, err, s.b))
	for {
		if err := s.sleep(); err != nil {
			return nil, err
		}
		if s.handoff != nil {
			// Passed the lock by a release: held under the owner now.
			s.held = true
			return e.adopt(s.c.ctx, s.c.op, s.owner, *s.handoff)
		}
		if ls, done, err := s.try(); done {
			return ls, err
		}
	}
}

// track has the hub hear of the lock key's next change, unless a hold of
// this Client holds the lock: its release passes it on or publishes, and
// its loss wakes a waiter (see core.Pass), so that a key handed from one
// goroutine to the next costs no read. Track errors are not fatal: the TTL
// timer still runs.
func (s *waiting) track() {
	if s.e.pass != nil && s.e.pass.Held() {
		return
	}
	_ = s.w.Track(s.c.ctx)
}

// register registers a waiter for the owner's wake-ups, and has the
// keeper keep its place.
func (s *waiting) register() error {
	w, err := s.e.register(s.c.op, s.owner)
	if err != nil {
		return err
	}
	s.w, s.ready = w, w.Ready()
	s.offer()
	s.keep()
	return nil
}

// offer lets a release of the same Client pass the lock to the owner, for a
// lock that may be so passed (Engine.pass).
func (s *waiting) offer() {
	if s.e.pass != nil {
		s.w.Offer(s.owner, s.e.leaseMs)
	}
}

// keep has the keeper keep the owner's place while it waits, for a kind
// whose waiters hold one (a fair lock's queue): they then sleep until told.
func (s *waiting) keep() {
	k := s.e.proto.Is().Keep
	if k == nil {
		return
	}
	if s.poked == nil {
		s.poked = make(chan struct{}, 1)
	}
	s.unkeep = s.e.client.Keeper().KeepPlace(k, s.owner, func() {
		select {
		case s.poked <- struct{}{}:
		default:
		}
	})
}

// stopKeeping ends the keeper's keeping of the owner's place.
func (s *waiting) stopKeeping() {
	if s.unkeep != nil {
		s.unkeep()
		s.unkeep = nil
	}
}

// sleep returns when the next attempt is due: on a wake-up, the
// subscription's confirmation or the timer. It fails when the ctx ends or
// the Client closes.
func (s *waiting) sleep() error {
	select {
	case <-s.c.ctx.Done():
		return s.e.ctxErr(s.c.ctx, s.c.op, s.last)
	case <-s.e.client.Context().Done():
		return s.e.Check(s.c.op)
	case <-s.ready:
		// Subscribed: releases from now on will be heard, but one may
		// have slipped in since the last attempt, so try once more.
		s.ready = nil
	case <-s.w.C():
	case <-s.t.C():
	case <-s.poked:
		// The keeper found the owner's place gone: try again for one.
	case g := <-s.w.Granted():
		s.handoff = &g
	}
	return nil
}

// try makes one attempt and says whether the wait is over (with the lease,
// or the error that ends it); if not, it sets the timer for the next.
func (s *waiting) try() (ls *lease.Lease, done bool, err error) {
	if !s.w.Begin() {
		// A release of this Client is passing the lock to the owner:
		// the lock, or a wake-up, is on its way.
		return nil, false, nil
	}
	s.c.attempts++
	ls, g, err := s.e.attempt(s.c.ctx, s.c.op, s.owner, true)
	s.w.End()
	switch {
	case ls != nil:
		s.held = true
		return ls, true, nil
	case err != nil && !retry.Transient(err):
		return nil, true, err
	case err != nil && s.c.ctx.Err() != nil:
		s.passOn = true // our attempt may have been the one a wake-up was for
		return nil, true, s.e.ctxErr(s.c.ctx, s.c.op, err)
	case err != nil && retry.Classify(err) == retry.Pause:
		// Redis did not run the script (BUSY, LOADING, a failover): the
		// owner has nothing to undo; back off and try again.
		s.last = err
	case err != nil:
		s.last = err
		if rerr := s.newOwner(); rerr != nil {
			return nil, true, rerr
		}
	default:
		s.b.Reset()
		s.last = nil
		s.track()
	}
	s.t.Reset(s.e.pause(g, err, s.b))
	return nil, false, nil
}

// newOwner goes on under a new owner after an attempt whose outcome is
// unknown: the undo of that attempt releases whatever its owner holds, so a
// later attempt under the same owner could win a lock the undo then frees.
// (A fair lock's waiter so rejoins the queue at its tail.) A kind whose
// waiters have channels of their own registers again.
func (s *waiting) newOwner() error {
	prev := s.owner
	s.stopKeeping()
	s.owner = s.e.client.NewOwner()
	if s.e.channel(s.owner) == s.e.channel(prev) {
		s.offer()
		s.keep()
		return nil
	}
	s.w.Leave(false)
	if err := s.register(); err != nil {
		s.w = nil
		return err
	}
	return nil
}

// stop ends the wait: the timer stopped, the owner's traces (a place in a
// queue) removed unless it holds the lock, and the waiter gone from the
// hub, handing on a wake-up it may have taken from another.
func (s *waiting) stop() {
	if s.t != nil {
		s.t.Stop()
	}
	s.stopKeeping()
	if !s.held {
		s.e.abandon(s.owner)
	}
	if s.w != nil {
		s.w.Leave(!s.held && s.passOn)
		if !s.held {
			select {
			case <-s.w.Granted():
				// Passed the lock as the wait ended: give it back.
				s.e.releaseNow(s.owner)
			default:
			}
		}
	}
}
