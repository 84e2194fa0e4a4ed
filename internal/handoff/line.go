package handoff

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/hub"
	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/internal/retry"
)

// Lines are one Client's lines, one per lock channel in which a candidate
// stands. The zero value is not usable; create one with New.
type Lines struct {
	hub *hub.Hub
	// standing counts the candidates of every line: a release finds none
	// without taking the lock.
	standing atomic.Int64
	mu       sync.Mutex // guards every line and candidate
	lines    map[string]*Line
}

// New returns a Client's lines; h is its hub, whose tracked key a pass's
// own write must not wake.
func New(h *hub.Hub) *Lines { return &Lines{hub: h, lines: make(map[string]*Line)} }

// Line is one lock's candidates on one Client, oldest first, and that
// Client's turn on the lock. It lives while a candidate stands in it.
type Line struct {
	channel, key string
	cands        []*Candidate
	// left is how many more releases of the turn pass the lock without
	// asking whether anyone else wants it.
	left int
	// until is, while the Client yields, when its candidates may next try
	// the lock (see yielding).
	until time.Time
	// window is how long a yield to a listener lasts, before the round trip
	// is added: listenFloor, doubled each time a yield's window passed with
	// nobody taking the lock (a listener slower to answer than the window),
	// back to listenFloor once one did.
	window time.Duration
	// events is the channel's count of messages when the release that
	// yields was sent; the first since is its own message. others is how
	// many other connections listened then, seen the count last read, and
	// span the window a message heard in the yield restarts (see yielding).
	events, seen uint64
	others       int64
	span         time.Duration
	// yielded is the channel's count of messages when the Client's last
	// yield began, 0 once its next turn has begun (see begin).
	yielded uint64
	// yield is set while the Client yields to others (see yielding), and
	// taken once an attempt in it found the lock taken by another.
	yield, taken bool
	// probing: the first attempt after the yield tells whether someone took
	// the lock during it.
	probing bool
	// last is when the line's last release was sent: the time between two
	// releases is how far ahead a release looks for a marked waiter's try.
	last time.Time
}

// A yield to listeners lasts listenFloor, plus twice the release's round
// trip, doubled up to listenCap while nobody takes the lock during it.
const (
	listenFloor = 2 * time.Millisecond
	listenCap   = 50 * time.Millisecond
)

// Pass is a lock passed to a candidate by a release of its Client.
type Pass struct {
	// Token is the candidate's fencing token.
	Token uint64
	// Sent is when the release that passed it was sent: the candidate's
	// lease runs from then.
	Sent time.Time
}

// state is where a candidate stands with a release of its Client.
type state int

const (
	idle   state = iota // waiting: a release may pick it
	trying              // its own attempt is in flight: not picked
	picked              // a release is passing it the lock
	passed              // passed: the Pass is in Passed
	gone                // it left while picked: the release gives the lock back
)

// Listener is a candidate's waiter as the hub registered it.
type Listener interface {
	// Listening reports whether its channel's subscription is confirmed.
	Listening() bool
	// Wake wakes it without blocking.
	Wake()
	// Messages counts the messages heard on its channel so far: one more
	// than at a release's start is the release's own; two more, a release
	// of someone else's. Invalidations are not counted: a lock passed
	// writes the key too.
	Messages() uint64
}

// Candidate is one waiter standing in a lock's line, as owner with a lease
// of lease (the scripts' milliseconds).
type Candidate struct {
	lines *Lines
	line  *Line
	w     Listener
	owner string
	lease string
	state state
	pass  chan Pass // buffer 1: passed once per pick
}

// Stand puts w, a waiter of channel (the lock key key) registered with the
// hub, in the lock's line as owner with a lease of lease (ms). Only a
// candidate whose subscription is confirmed is picked: the channel's count
// of listeners then includes this Client. Leave must be called.
func (ls *Lines) Stand(w Listener, channel, key, owner, lease string) *Candidate {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l := ls.lines[channel]
	if l == nil {
		l = &Line{channel: channel, key: key, window: listenFloor}
		ls.lines[channel] = l
	}
	c := &Candidate{lines: ls, line: l, w: w, owner: owner, lease: lease, pass: make(chan Pass, 1)}
	l.cands = append(l.cands, c)
	ls.standing.Add(1)
	return c
}

// Reown makes the candidate stand for owner, after its attempt's outcome
// was unknown (see engine's newOwner). Only its own goroutine calls it.
func (c *Candidate) Reown(owner string) {
	c.lines.mu.Lock()
	defer c.lines.mu.Unlock()
	c.owner, c.state = owner, idle
}

// MayTry reports whether the candidate may try the lock now, and marks it
// trying until Tried. It may not while a release has picked it (the lock,
// or a wake-up, is on its way: until is zero) or while its Client yields
// (until is when the yield ends).
func (c *Candidate) MayTry(now time.Time) (ok bool, until time.Time) {
	c.lines.mu.Lock()
	defer c.lines.mu.Unlock()
	switch {
	case c.state == picked, c.state == passed:
		return false, time.Time{}
	case c.line.yielding(c, now):
		return false, c.line.until
	}
	c.state = trying
	return true, time.Time{}
}

// yielding reports whether the Client still yields to others. The yield
// lasts until each other listener counted when it began has had its turn:
// as many releases of others heard as there were others (one for a marked
// waiter's). Meanwhile a candidate may try the lock once a window has
// passed since the last message heard (each restarts it), so that a
// listener that never tries keeps the Client back one window only; an
// attempt that finds the lock taken (by another's turn under way) keeps the
// yield on (see Tried). Called with Lines.mu held.
func (l *Line) yielding(c *Candidate, now time.Time) bool {
	if !l.yield {
		return false
	}
	if ev := c.w.Messages(); ev > l.seen {
		l.seen = ev
		if ev-l.events > uint64(max(l.others, 1)) { // its own message, then theirs
			l.yield, l.until = false, time.Time{}
			return false
		}
		if end := now.Add(l.span); l.taken || end.After(l.until) {
			l.until, l.taken = end, false
		}
	}
	return now.Before(l.until)
}

// yieldRetry is how long a yield whose attempt found the lock taken waits
// for a message before its candidates try again: a message lost (a
// subscription broken, a PUBLISH refused) costs no more.
const yieldRetry = time.Second

// stirred reports whether, since the yield's release was sent, the channel
// heard two messages: its own, then another's release. Someone else took
// the lock in the yield. Called with Lines.mu held.
func (l *Line) stirred(c *Candidate) bool {
	return c.w.Messages() > l.events+1
}

// Tried ends the attempt MayTry allowed; won reports whether it took the
// lock, which begins the Client's turn: every other candidate standing now
// is passed the lock once before a release asks whether anyone else wants
// it. The first attempt after a yield tells whether the yield's window was
// long enough for a listener: one that won found nobody took the lock.
func (c *Candidate) Tried(won bool) {
	c.lines.mu.Lock()
	defer c.lines.mu.Unlock()
	if c.state == trying {
		c.state = idle
	}
	l := c.line
	if l.probing {
		// Nobody took the lock in the yield when this attempt won and
		// nothing stirred: the listeners, if any, were slower than the
		// window, which doubles.
		l.probing = false
		if won && !l.stirred(c) {
			l.window = min(2*l.window, listenCap)
		} else {
			l.window = listenFloor
		}
	}
	switch {
	case won:
		l.yield = false
		l.begin(len(l.cands)-1, c.w.Messages())
	case l.yield:
		// Taken by another, whose turn is under way: its release's
		// message says when to look again.
		l.until, l.taken = time.Now().Add(yieldRetry), true
	}
}

// maxTurn bounds a turn that makes up for the releases of others heard
// since the Client's last turn (see begin).
const maxTurn = 64

// begin begins a turn of the Client: waiting of its candidates stand in
// line, and ev is the channel's count of messages now. The turn passes the
// lock once to each of them, or, after a yield, as many times as others
// released it meanwhile, if more (up to maxTurn): a client that re-locks at
// once after its own unlock (Redisson's threads do) takes the lock many
// times in a row while this Client's waiters lose the race to it, and each
// of its releases is heard here; so the Client's share of a contended lock
// grows with its waiters, whoever else wants it. Called with Lines.mu held.
func (l *Line) begin(waiting int, ev uint64) {
	heard := 0
	if l.yielded > 0 && ev > l.yielded+1 { // the yield's own message aside
		heard = int(min(ev-l.yielded-1, maxTurn))
	}
	l.left, l.yielded = max(waiting, heard), 0
}

// Passed receives the Pass of a lock a release passed the candidate.
func (c *Candidate) Passed() <-chan Pass { return c.pass }

// Leave takes the candidate out of its line. A pass that comes to it from
// now on is given back by its release; one already in Passed is the
// caller's to give back.
func (c *Candidate) Leave() {
	ls := c.lines
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if c.state == picked {
		c.state = gone
	}
	l := c.line
	for i, o := range l.cands {
		if o == c {
			l.cands = append(l.cands[:i], l.cands[i+1:]...)
			ls.standing.Add(-1)
			break
		}
	}
	if len(l.cands) == 0 && ls.lines[l.channel] == l {
		delete(ls.lines, l.channel)
	}
}

// Won begins a turn of the Client on the lock of channel, taken by an
// attempt of a goroutine that stood in no line: every candidate standing
// now is passed the lock once before a release asks whether anyone else
// wants it.
func (ls *Lines) Won(channel string) {
	if ls.standing.Load() == 0 {
		return
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l := ls.lines[channel]; l != nil {
		l.begin(len(l.cands), l.cands[0].w.Messages())
	}
}

// Result is what Release did.
type Result struct {
	// Ran reports whether the handoff script ran: a candidate stood in
	// line. When it did not, the caller releases the lock as usual.
	Ran bool
	// Outcome is the script's: lua.HandedOff, lua.Freed, lua.StillHeld or
	// lua.NotHeld.
	Outcome int64
	// GiveBack is an owner the lock may be held under by a candidate that
	// left while it was being passed: the caller releases its every hold.
	GiveBack string
}

// Release gives up every hold of owner on the lock of channel, by to's
// script on rc, when a candidate stands in its line: it passes the lock to
// the longest-waiting candidate, or, at the end of the Client's turn when
// someone else wants the lock, publishes and yields. Otherwise it does
// nothing and says so (Ran false). A candidate it picked gets the lock
// (Passed) or a wake-up to try it itself.
func (ls *Lines) Release(ctx context.Context, rc rueidis.Client, to lua.Handoff, channel, owner string) (Result, error) {
	if ls.standing.Load() == 0 {
		return Result{}, nil
	}
	sent := time.Now()
	ls.mu.Lock()
	l := ls.lines[channel]
	var c *Candidate
	if l != nil {
		c = l.pick()
	}
	if c == nil {
		ls.mu.Unlock()
		return Result{}, nil
	}
	ask := l.left <= 0
	events := c.w.Messages()
	// A marked waiter due to try before the next release, about as far
	// ahead as the last one, is yielded to by this one.
	ahead := time.Millisecond
	if !l.last.IsZero() {
		ahead = min(max(sent.Sub(l.last), time.Millisecond), time.Second)
	}
	l.last = sent
	successor, lease := c.owner, c.lease
	ls.mu.Unlock()

	p, err := to.ReleaseTo(ctx, rc, owner, successor, lease, ask, ahead)
	r := Result{Ran: true, Outcome: p.Outcome}
	switch {
	case err == nil && p.Outcome == lua.HandedOff:
		if !ls.hand(c, Pass{Token: p.Token, Sent: sent}, ask && !p.Pending) {
			r.GiveBack = successor
			return r, nil
		}
		// The successor, readied by hand, runs next on this P: the lock
		// it holds now waits for no more of this release than its return
		// (as sync.Mutex hands off to a waiter in starvation mode).
		runtime.Gosched()
		return r, nil
	case err == nil && p.Outcome == lua.Yielded:
		r.Outcome = lua.Freed
		ls.yield(c, time.Now(), p, time.Since(sent), events)
		return r, nil
	}
	if !ls.unpick(c) && retry.Classify(err) == retry.Unknown {
		// The pass may have run, and its candidate is gone.
		r.GiveBack = successor
	}
	return r, err
}

// pick reserves the longest-waiting idle candidate whose subscription is
// confirmed: until hand or unpick it makes no attempt of its own. Called
// with Lines.mu held.
func (l *Line) pick() *Candidate {
	for _, c := range l.cands {
		if c.state == idle && c.w.Listening() {
			c.state = picked
			return c
		}
	}
	return nil
}

// hand gives the picked candidate the lock its release passed it, and
// reports whether it was still standing; false: it left, and the caller
// gives the lock back. A pass after asking, with nobody else wanting the
// lock, begins a new turn; one without asking counts down the turn. The
// hub's tracked key's next invalidation, the pass's own write, wakes no one.
func (ls *Lines) hand(c *Candidate, p Pass, asked bool) bool {
	ls.mu.Lock()
	if c.state != picked {
		ls.mu.Unlock()
		return false
	}
	c.state = passed
	c.pass <- p // buffered, and passed once per pick
	l := c.line
	if asked {
		l.left = len(l.cands) - 1
	} else {
		l.left--
	}
	ls.mu.Unlock()
	ls.hub.Mute(l.key)
	return true
}

// unpick ends a pick that passed nothing, waking the candidate to try the
// lock itself, and reports whether it was still standing; false: it left,
// and the caller gives back what the pass's unknown outcome may have left
// held under its owner.
func (ls *Lines) unpick(c *Candidate) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if c.state != picked {
		return false
	}
	c.state = idle
	c.w.Wake()
	return true
}

// yield makes the Client stand back after a release, at the end of its
// turn, published for others who want the lock (p): for as long as a
// listener takes to answer the message (the window and two of the
// release's round trips, rtt), and at least until the mark of a waiter that
// does not listen runs out (its next try, and a margin); or until every
// other listener had its turn (see yielding), events being the channel's
// count of wake-ups when the release was sent. The picked candidate is
// woken to try when the yield ends.
func (ls *Lines) yield(c *Candidate, now time.Time, p lua.Passed, rtt time.Duration, events uint64) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l := c.line
	var span time.Duration
	if p.Listeners != 0 {
		// A round trip slowed by a reconnection says nothing of how fast
		// a listener answers: the window is capped.
		span = min(l.window+2*rtt, listenCap)
	}
	l.yield, l.taken, l.until, l.probing, l.left = true, false, now.Add(max(span, p.Mark)), true, 0
	l.events, l.seen, l.others, l.span, l.yielded = events, events, p.Listeners, span, events
	if c.state == picked {
		c.state = idle
		c.w.Wake()
	}
}
