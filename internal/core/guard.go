package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/retry"
	"github.com/leasehold/leasehold/lease"
)

// confirmTimeout bounds one round of confirmations.
const confirmTimeout = 5 * time.Second

// armDelay is how long after it is taken a hold's key starts to be tracked
// (by the first read of its presence). A hold given back sooner, as most
// are in a busy service, costs no read at all; a removal in its first
// moments is heard when the read finds it gone, armDelay and a round trip
// after the acquisition at most.
const armDelay = 5 * time.Millisecond

// guard tells a Client's holders at once that their hold is gone from
// Redis, whatever removed it (a DEL, FLUSHALL, an eviction, an expiry, a
// force release, a key of another type written over it), instead of at the
// next renewal. It reads each hold's presence (lua.Presence) on a connection
// of its own with CLIENT TRACKING on (see tracking): Redis then sends an
// invalidation of the key on any change to it. An invalidation is only a
// hint (the holder's own renewals and re-entries, other readers' holds,
// other permits change the key too), so the guard reads the hold's presence
// again before it reports a loss; that read also keeps the key tracked,
// since Redis stops tracking a key once it has invalidated it. Hints for one
// key coalesce: at most one read per key per round, rounds one after the
// other.
//
// Redis keeps a key it tracks in its tracking table until the key is
// written again, and lock names are often used once: so nothing is read
// once its hold is being released or is gone, nor a waiter's key once its
// last waiter has left (unwatch). A hold's release waits for a read of it in
// flight (Hold.take), so that the read never comes after the release's DEL;
// a waiter's read in flight can still land after another Client's release,
// which nothing here orders. Where the server offers no tracking the guard
// stops, says so once, and a loss is heard at the next renewal.
type guard struct {
	t    *tracking
	warn func(error)
	// hint hears the keys whose tracking ended: an invalidation, a waiter's
	// key found gone (see watch); nil for every key. nil: no one listens.
	hint func(keys []string)
	wake chan struct{}
	done chan struct{}
	stop context.CancelFunc
	ctx  context.Context

	untracked atomic.Bool // the server refused tracking: the guard stopped
	soon      bool        // a read was answered MOVED: the next round comes soon (guard's goroutine only)

	mu      sync.Mutex
	keys    map[string][]*Hold  // the holds on each key; Hold.guardAt is the index
	pending map[string]struct{} // keys hinted at since the last round
	all     bool                // every key: the cache was flushed
	arming  []*Hold             // holds taken, not yet read
	armAt   time.Time           // when the first of arming is due
	// armer runs armFire when the first of arming or watching is due: a
	// timer of its own, so that taking a hold wakes no goroutine (most are
	// given back before it fires, and it finds nothing to read).
	armer    *time.Timer
	armerSet bool // armer is scheduled
	// watching are waiters' lock keys to read once watchAt has passed,
	// watchDue those to read next round (see watch).
	watching map[string]struct{}
	watchAt  time.Time
	watchDue map[string]struct{}
}

// newGuard starts the guard of holds on rc, or returns nil when the server
// offers no tracking, after warning of it. rc nil: no guard. hint, if not
// nil, hears the keys whose tracking ended (see guard.hint).
func newGuard(rc rueidis.Client, warn func(error), hint func([]string)) *guard {
	if rc == nil {
		return nil
	}
	ctx, stop := context.WithCancel(context.Background())
	g := &guard{warn: warn, hint: hint, wake: make(chan struct{}, 1), done: make(chan struct{}), stop: stop, ctx: ctx,
		keys: make(map[string][]*Hold), pending: make(map[string]struct{}), watching: make(map[string]struct{}),
		watchDue: make(map[string]struct{})}
	g.t = newTracking(rc, g.onInvalidations)
	g.armer = time.AfterFunc(time.Hour, g.armFire)
	g.armer.Stop()
	pctx, cancel := context.WithTimeout(ctx, confirmTimeout)
	err := g.t.probe(pctx)
	cancel()
	if errors.Is(err, errUntracked) {
		g.refuse(err)
		stop()
		return nil
	}
	// Any other failure is a pause: the first read tries again.
	go g.run()
	return g
}

// refuse stops the guard for good: the server gives it no invalidations.
func (g *guard) refuse(err error) {
	if g.untracked.Swap(true) {
		return
	}
	g.warn(fmt.Errorf("leasehold: %w: a removal of a held lock (a DEL, FLUSHALL, an eviction, a force release) "+
		"is heard at its next renewal, up to a third of the watchdog lease later, not at once", err))
	g.mu.Lock()
	for _, hs := range g.keys {
		for _, h := range hs {
			h.guardAt = -1
		}
	}
	clear(g.keys)
	clear(g.pending)
	clear(g.watching)
	clear(g.watchDue)
	g.arming = nil
	g.mu.Unlock()
}

// tracked reports whether the guard hears of removals: it runs and the
// server has not refused it tracking.
func (g *guard) tracked() bool { return g != nil && !g.untracked.Load() }

// onInvalidations takes an invalidation message of a tracking connection:
// keys, or nil when the whole cache was flushed (FLUSHALL, a lost
// connection). It runs on rueidis' goroutine and does not block.
func (g *guard) onInvalidations(keys []rueidis.RedisMessage) {
	if keys == nil {
		g.invalidate(nil, true)
		return
	}
	names := make([]string, 0, len(keys))
	for _, k := range keys {
		if s, err := k.ToString(); err == nil {
			names = append(names, s)
		}
	}
	g.invalidate(names, false)
	if g.hint != nil {
		g.hint(names)
	}
}

// watch has key, a waiter's lock key, read on the tracking connection
// within armDelay, so that its next change (a release, an expiry, a
// deletion) comes back as an invalidation to hint; a key found gone by then
// is handed to hint at once, so nothing is missed in between. The delay
// lets a key that changes hands many times a second be read once per
// armDelay, not after each change. It does not block: the read is the
// guard's.
func (g *guard) watch(key string) {
	if !g.tracked() {
		return
	}
	g.mu.Lock()
	if len(g.watching) == 0 {
		g.watchAt = time.Now().Add(armDelay)
		g.schedule(armDelay)
	}
	g.watching[key] = struct{}{}
	g.mu.Unlock()
}

// unwatch drops key from the waiters' keys to read: no one waits on it any
// more. Read after its release, a key never written again would stay in
// Redis' tracking table for good; a read sent already is not called back.
func (g *guard) unwatch(key string) {
	if !g.tracked() {
		return
	}
	g.mu.Lock()
	delete(g.watching, key)
	delete(g.watchDue, key)
	g.mu.Unlock()
}

// watched takes the waiters' keys to read this round.
func (g *guard) watched() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.watchDue) == 0 {
		return nil
	}
	keys := make([]string, 0, len(g.watchDue))
	for key := range g.watchDue {
		keys = append(keys, key)
	}
	clear(g.watchDue)
	return keys
}

// add guards h from now on: armDelay later, unless it was given back, a
// round reads its presence, which starts the tracking of its key.
func (g *guard) add(h *Hold) {
	key := h.cfg.Presence.Key
	if !g.tracked() || key == "" {
		return
	}
	g.mu.Lock()
	hs := g.keys[key]
	if hs == nil {
		// The usual case, one hold on a key, costs no allocation: the
		// hold lends its own array.
		hs = h.alone[:0:1]
	}
	h.guardAt = len(hs)
	g.keys[key] = append(hs, h)
	if len(g.arming) == 0 {
		// The arming timer is set for the first of a batch: the others
		// are read with it.
		g.armAt = time.Now().Add(armDelay)
		g.schedule(armDelay)
	}
	g.arming = append(g.arming, h)
	g.mu.Unlock()
}

// schedule has armFire run in d, unless it is to run already (sooner: every
// batch waits armDelay from its first). Called with g.mu held.
func (g *guard) schedule(d time.Duration) {
	if !g.armerSet {
		g.armerSet = true
		g.armer.Reset(d)
	}
}

// armFire marks what is due for the next round (armDue), schedules itself
// for what is not due yet, and wakes the guard's goroutine if a read is due.
func (g *guard) armFire() {
	g.mu.Lock()
	if g.ctx.Err() != nil {
		g.mu.Unlock()
		return // closed: close stopped it
	}
	g.armerSet = false
	g.armDue()
	if d, ok := g.nextArm(); ok {
		g.schedule(d)
	}
	due := len(g.pending) > 0 || len(g.watchDue) > 0
	g.mu.Unlock()
	if due {
		g.notify()
	}
}

// remove stops guarding h.
func (g *guard) remove(h *Hold) {
	key := h.cfg.Presence.Key
	if g == nil || key == "" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	hs, i := g.keys[key], h.guardAt
	if i < 0 || i >= len(hs) || hs[i] != h {
		return
	}
	last := len(hs) - 1
	if i != last {
		hs[i] = hs[last]
		hs[i].guardAt = i
	}
	hs[last] = nil
	h.guardAt = -1
	if last == 0 {
		delete(g.keys, key)
	} else {
		g.keys[key] = hs[:last]
	}
}

// invalidate takes the hint that keys changed; all: every key (the cache
// was flushed, or a tracking connection was made again).
func (g *guard) invalidate(keys []string, all bool) {
	if g == nil {
		return
	}
	if all && g.hint != nil {
		g.hint(nil) // the waiters' keys too
	}
	hinted := false
	g.mu.Lock()
	if all {
		g.all, hinted = len(g.keys) > 0, len(g.keys) > 0
	}
	for _, k := range keys {
		// A hold not armed yet is read when it is: a change before then
		// is most often its own Client's (an acquire, a handoff), and
		// reading at every one would keep a busy key in a loop of reads.
		if slices.ContainsFunc(g.keys[k], func(h *Hold) bool { return h.armed }) {
			g.pending[k], hinted = struct{}{}, true
		}
	}
	g.mu.Unlock()
	if hinted {
		g.notify()
	}
}

// rehint has h's key read again: a release of h that Redis did not
// confirm may have let an invalidation pass unread.
func (g *guard) rehint(h *Hold) {
	if key := h.cfg.Presence.Key; g.tracked() && key != "" {
		g.invalidate([]string{key}, false)
	}
}

// later marks key for the round after a failed read, which the backoff
// timer starts: a notify would start it at once, a busy loop while Redis
// is unreachable. waiting: a waiter's key (see watch), not a hold's.
func (g *guard) later(key string, waiting bool) {
	g.mu.Lock()
	if waiting {
		g.watchDue[key] = struct{}{}
	} else {
		g.pending[key] = struct{}{}
	}
	g.mu.Unlock()
}

// retry has key read again after a read that failed with err: movedDelay
// later after MOVED, which corrected the slot map (a slot that moved must
// not leave its waiters deaf for a growing backoff; nor may nodes that
// disagree during a resharding bounce a read between them at full speed),
// else after the backoff, which *failed starts. Called on the guard's
// goroutine.
func (g *guard) retry(key string, waiting bool, err error, failed *bool) {
	g.later(key, waiting)
	if retry.HasCode(err, "MOVED") {
		g.soon = true
		return
	}
	*failed = true
}

// movedDelay is how soon a read answered MOVED is made again.
const movedDelay = 5 * time.Millisecond

// notify wakes the guard's goroutine without blocking.
func (g *guard) notify() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// close stops the guard, waits for its goroutine and closes its
// connections. A connection being made when it is called (on a single
// Redis rueidis dials without a ctx) is waited for, up to the rueidis
// client's dial timeout.
func (g *guard) close() {
	if g == nil {
		return
	}
	g.stop()
	<-g.done
	g.mu.Lock()
	g.armer.Stop()
	g.armerSet = true // never again
	g.mu.Unlock()
	g.t.close()
}

func (g *guard) run() {
	defer close(g.done)
	again := time.NewTimer(time.Hour)
	again.Stop()
	defer again.Stop()
	b := retry.Backoff(10*time.Millisecond, time.Second)
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-g.wake:
		case <-again.C:
		}
		switch failed := g.round(); {
		case failed:
			again.Reset(b.NextBackOff())
		case g.soon:
			again.Reset(movedDelay)
		default:
			b.Reset()
		}
		g.soon = false
	}
}

// nextArm is how long until the holds taken are due to be read, if any are
// waiting. Called with g.mu held.
func (g *guard) nextArm() (time.Duration, bool) {
	var at time.Time
	switch {
	case len(g.arming) > 0 && len(g.watching) > 0:
		at = g.armAt
		if g.watchAt.Before(at) {
			at = g.watchAt
		}
	case len(g.arming) > 0:
		at = g.armAt
	case len(g.watching) > 0:
		at = g.watchAt
	default:
		return 0, false
	}
	return max(time.Until(at), 0), true
}

// armDue marks the keys of the holds taken since the last arming, and still
// guarded, for the next round, once the first of them is armDelay old; and
// the waiters' keys, once the first of them is. Called with g.mu held.
func (g *guard) armDue() {
	now := time.Now()
	if len(g.watching) > 0 && !now.Before(g.watchAt) {
		for key := range g.watching {
			g.watchDue[key] = struct{}{}
		}
		clear(g.watching)
	}
	if now.Before(g.armAt) {
		return
	}
	for i, h := range g.arming {
		if h.guardAt >= 0 {
			g.pending[h.cfg.Presence.Key] = struct{}{}
			h.armed = true
		}
		g.arming[i] = nil
	}
	g.arming = g.arming[:0]
}

// due takes the keys hinted at since the last round with the holds on each
// that may be read, marking each hold read (see Hold.beginRead) until done
// is closed. A key none of whose holds may be read is not read at all.
func (g *guard) due() (khs []keyHolds, done chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	keys := g.pending
	if g.all {
		keys = make(map[string]struct{}, len(g.keys))
		for key := range g.keys {
			keys[key] = struct{}{}
		}
	}
	for key := range keys {
		set := g.keys[key]
		if len(set) == 0 {
			continue // given back since the hint
		}
		if done == nil {
			done = make(chan struct{})
		}
		kh := keyHolds{key: key}
		for _, h := range set {
			if !h.beginRead(done) {
				continue // being released, or lost: never read again
			}
			if h.cfg.Presence.Members != nil {
				kh.zset = true
			}
			kh.holds = append(kh.holds, h)
		}
		if len(kh.holds) > 0 {
			khs = append(khs, kh)
		}
	}
	clear(g.pending)
	g.all = false
	return khs, done
}

// keyHolds are the holds on one key, read together: one HMGET of their
// fields, or one ZMSCORE of their members (a semaphore's permits).
type keyHolds struct {
	key   string
	zset  bool
	holds []*Hold
}

// names are the fields or members the read asks for, every hold's in turn.
func (kh keyHolds) names() []string {
	var names []string
	for _, h := range kh.holds {
		if kh.zset {
			names = append(names, h.cfg.Presence.Members...)
		} else {
			names = append(names, h.cfg.Presence.Field)
		}
	}
	return names
}

// round reads the presence of every hinted hold, one read per key, in one
// pipeline per node, and reports those found gone lost. It returns whether
// some reads failed: their keys are hinted at again, for a round after a
// backoff.
func (g *guard) round() (failed bool) {
	khs, done := g.due()
	if done != nil {
		defer func() {
			for _, kh := range khs {
				for _, h := range kh.holds {
					h.endRead(done)
				}
			}
			close(done)
		}()
	}
	watched := g.watched()
	if len(khs) == 0 && len(watched) == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(g.ctx, confirmTimeout)
	defer cancel()
	reads := make([]rueidis.Completed, len(khs), len(khs)+len(watched))
	for i, kh := range khs {
		reads[i] = presenceRead(g.t.rc, kh)
	}
	for _, key := range watched {
		reads = append(reads, g.t.rc.B().Exists().Key(key).Build())
	}
	res, again := g.t.read(ctx, reads)
	if len(again) > 0 {
		// A connection was made again: what the last one tracked is
		// tracked no more, and its invalidations were lost.
		g.invalidate(nil, true)
	}
	refused, failed := g.waitersRead(watched, res[len(khs):])
	if refused {
		return false
	}
	for i, r := range res[:len(khs)] {
		kh := khs[i]
		gone, err := absent(r, kh)
		if errors.Is(err, errUntracked) {
			g.refuse(err)
			return false
		}
		if err != nil && retry.Classify(err) != retry.Final || isMoved(err) {
			g.retry(kh.key, false, err, &failed)
			continue
		}
		for j, h := range kh.holds {
			if (retry.HasCode(err, "WRONGTYPE") || (err == nil && gone[j])) && h.guarded() {
				why := "not there"
				if err != nil {
					why = err.Error() // a key of another type written over it
				}
				h.gone(Errorf("hold", h.cfg.Name, "%w: gone from Redis (%s, read after an invalidation of %s)",
					lease.ErrLost, why, kh.key))
			}
		}
	}
	return failed
}

// waitersRead takes the replies to the reads of waiters' keys (EXISTS): a
// key gone is handed to hint, so that its waiters try at once, since the
// invalidation that would have told of it came before the read; a read that
// failed for now is made again after a backoff. A read refused for good is
// not made again: the waiters' timers stand in for it. It reports whether
// the server refused tracking, and whether some reads are to be made again.
func (g *guard) waitersRead(keys []string, res []rueidis.RedisResult) (refused, failed bool) {
	var gone []string
	for i, r := range res {
		n, err := r.AsInt64()
		switch {
		case errors.Is(err, errUntracked):
			g.refuse(err)
			return true, false
		case err != nil && (retry.Classify(err) != retry.Final || isMoved(err)):
			g.retry(keys[i], true, err, &failed)
		case err == nil && n == 0:
			gone = append(gone, keys[i])
		}
	}
	if len(gone) > 0 && g.hint != nil {
		g.hint(gone)
	}
	return false, failed
}

// isMoved reports whether err is a MOVED or ASK reply: the key lives on
// another node, where it is read again.
func isMoved(err error) bool {
	return retry.HasCode(err, "MOVED") || retry.HasCode(err, "ASK")
}

// presenceRead is the read of the holds of one key: HMGET of their fields,
// or ZMSCORE of their members.
func presenceRead(rc rueidis.Client, kh keyHolds) rueidis.Completed {
	if kh.zset {
		return rc.B().Zmscore().Key(kh.key).Member(kh.names()...).Build()
	}
	return rc.B().Hmget().Key(kh.key).Field(kh.names()...).Build()
}

// absent reads the reply to presenceRead(kh): whether each hold is gone
// (any of its members missing, for a semaphore's).
func absent(r rueidis.RedisResult, kh keyHolds) ([]bool, error) {
	vals, err := r.ToArray()
	if err != nil {
		return nil, err
	}
	if len(vals) != len(kh.names()) {
		return nil, fmt.Errorf("presence of %s: %d values for %d names", kh.key, len(vals), len(kh.names()))
	}
	gone := make([]bool, len(kh.holds))
	n := 0
	for j, h := range kh.holds {
		count := 1
		if kh.zset {
			count = len(h.cfg.Presence.Members)
		}
		for _, v := range vals[n : n+count] {
			gone[j] = gone[j] || v.IsNil()
		}
		n += count
	}
	return gone, nil
}
