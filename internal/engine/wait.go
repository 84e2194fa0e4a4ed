package engine

import (
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/leasehold/leasehold/internal/handoff"
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
	poked    chan struct{}
	unkeep   func()
	held     bool // an attempt won: the owner's traces are the lease's now
	wakeNext bool // the wait ended on a wake-up that may have been ours
	// cand stands in the lock's line, for a lock a release of the same
	// Client may pass (Engine.pass); nil otherwise.
	cand *handoff.Candidate
	// passed is the lock a release of the same Client passed the owner,
	// once received.
	passed *handoff.Pass
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
		if s.passed != nil {
			// Passed the lock by a release: held under the owner now.
			s.held = true
			return e.adopt(s.c.ctx, s.c.op, s.owner, *s.passed)
		}
		if ls, done, err := s.try(); done {
			return ls, err
		}
	}
}

// track has the hub hear of the lock key's next change, unless a hold of
// this Client holds the lock: its release passes it on or publishes, and
// its loss wakes a waiter (see core.Passing), so that a key handed from one
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
	s.stand()
	s.keep()
	return nil
}

// stand puts the owner in the lock's line, for a lock that a release of
// the same Client may pass it (Engine.pass).
func (s *waiting) stand() {
	if p := s.e.pass; p != nil {
		ch, key := s.e.proto.Wakeup(s.owner)
		s.cand = s.e.client.Lines().Stand(s.w, ch, key, s.owner, s.e.leaseMs)
	}
}

// passes receives the lock passed to the owner; nil, never ready, for a
// waiter that stands in no line.
func (s *waiting) passes() <-chan handoff.Pass {
	if s.cand == nil {
		return nil
	}
	return s.cand.Passed()
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
	case p := <-s.passes():
		s.passed = &p
	}
	return nil
}

// try makes one attempt and says whether the wait is over (with the lease,
// or the error that ends it); if not, it sets the timer for the next.
func (s *waiting) try() (ls *lease.Lease, done bool, err error) {
	if s.cand != nil {
		if ok, until := s.cand.MayTry(time.Now()); !ok {
			// A release of this Client is passing the lock to the owner
			// (the lock, or a wake-up, is on its way), or the Client
			// yields to a waiter elsewhere until then.
			if !until.IsZero() {
				s.t.Reset(time.Until(until))
			}
			return nil, false, nil
		}
	}
	s.c.attempts++
	// A waiter that does not listen polls, and leaves its mark: when it
	// tries next.
	var want time.Duration
	if !s.w.Listening() {
		want = handoff.PollEvery
	}
	ls, g, err := s.e.attempt(s.c.ctx, s.c.op, s.owner, true, want)
	if s.cand != nil {
		s.cand.Tried(ls != nil)
	}
	switch {
	case ls != nil:
		s.held = true
		return ls, true, nil
	case err != nil && !retry.Transient(err):
		return nil, true, err
	case err != nil && s.c.ctx.Err() != nil:
		s.wakeNext = true // our attempt may have been the one a wake-up was for
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
	d := s.e.pause(g, err, s.b)
	if want > 0 {
		d = min(d, want)
	}
	s.t.Reset(d)
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
		if s.cand != nil {
			s.cand.Reown(s.owner)
		}
		s.keep()
		return nil
	}
	s.leaveLine()
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
	s.leaveLine()
	if s.w != nil {
		s.w.Leave(!s.held && s.wakeNext)
	}
}

// leaveLine takes the owner out of the lock's line, giving back a lock
// passed to it as the wait ended.
func (s *waiting) leaveLine() {
	if s.cand == nil {
		return
	}
	s.cand.Leave()
	if !s.held {
		select {
		case <-s.cand.Passed():
			s.e.releaseNow(s.owner)
		default:
		}
	}
	s.cand = nil
}
