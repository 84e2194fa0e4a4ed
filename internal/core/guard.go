package core

import (
	"context"
	"fmt"
	"sync"
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
// next renewal. It keeps each hold's key tracked by the Client's connection
// (client-side caching, CLIENT TRACKING): Redis then sends an invalidation
// of the key on any change to it. An invalidation is only a hint (the
// holder's own renewals and re-entries, other readers' holds, other permits
// change the key too), so the guard reads the hold's presence (lua.Presence)
// before it reports a loss; that read, made as a cached read, also keeps the
// key tracked, since Redis stops tracking a key once it has invalidated it.
// Hints for one key coalesce: at most one read per hold per round, rounds
// one after the other. Without tracking (a Client made by New, or a rueidis
// client with DisableCache) the guard does nothing: a loss is heard at the
// next renewal.
type guard struct {
	rc   rueidis.Client
	ttl  time.Duration // how long the client-side cache keeps a confirmation
	wake chan struct{}
	done chan struct{}
	stop context.CancelFunc
	ctx  context.Context

	mu      sync.Mutex
	keys    map[string]map[*Hold]struct{} // the holds on each key
	pending map[string]struct{}           // keys hinted at since the last round
	all     bool                          // every key: the cache was flushed
	arming  []*Hold                       // holds taken, not yet read
	armAt   time.Time                     // when the first of arming is due
}

// newGuard starts the guard of holds on rc, or returns nil when rc's
// invalidations do not reach Invalidate.
func newGuard(rc rueidis.Client, ttl time.Duration, tracking bool) *guard {
	if !tracking {
		return nil
	}
	ctx, stop := context.WithCancel(context.Background())
	g := &guard{rc: rc, ttl: ttl, wake: make(chan struct{}, 1), done: make(chan struct{}), stop: stop, ctx: ctx,
		keys: make(map[string]map[*Hold]struct{}), pending: make(map[string]struct{})}
	go g.run()
	return g
}

// add guards h from now on: armDelay later, unless it was given back, a
// round reads its presence, which starts the tracking of its key.
func (g *guard) add(h *Hold) {
	key := h.cfg.Presence.Key
	if g == nil || key == "" {
		return
	}
	g.mu.Lock()
	if g.keys[key] == nil {
		g.keys[key] = make(map[*Hold]struct{})
	}
	g.keys[key][h] = struct{}{}
	if len(g.arming) == 0 {
		g.armAt = time.Now().Add(armDelay)
	}
	g.arming = append(g.arming, h)
	g.mu.Unlock()
	g.notify()
}

// remove stops guarding h.
func (g *guard) remove(h *Hold) {
	key := h.cfg.Presence.Key
	if g == nil || key == "" {
		return
	}
	g.mu.Lock()
	if hs := g.keys[key]; hs != nil {
		delete(hs, h)
		if len(hs) == 0 {
			delete(g.keys, key)
		}
	}
	g.mu.Unlock()
}

// invalidate takes the hint that keys changed; nil keys: the whole cache
// was flushed (FLUSHALL, FLUSHDB, a lost connection).
func (g *guard) invalidate(keys []string, all bool) {
	if g == nil {
		return
	}
	hinted := false
	g.mu.Lock()
	if all {
		g.all, hinted = len(g.keys) > 0, len(g.keys) > 0
	}
	for _, k := range keys {
		if _, ok := g.keys[k]; ok {
			g.pending[k], hinted = struct{}{}, true
		}
	}
	g.mu.Unlock()
	if hinted {
		g.notify()
	}
}

// later marks key for the round after a failed read, which the backoff
// timer starts: a notify would start it at once, a busy loop while Redis
// is unreachable.
func (g *guard) later(key string) {
	g.mu.Lock()
	g.pending[key] = struct{}{}
	g.mu.Unlock()
}

// notify wakes the guard's goroutine without blocking.
func (g *guard) notify() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// close stops the guard and waits for its goroutine.
func (g *guard) close() {
	if g == nil {
		return
	}
	g.stop()
	<-g.done
}

func (g *guard) run() {
	defer close(g.done)
	again := time.NewTimer(time.Hour)
	again.Stop()
	defer again.Stop()
	arm := time.NewTimer(time.Hour)
	arm.Stop()
	defer arm.Stop()
	b := retry.Backoff(10*time.Millisecond, time.Second)
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-g.wake:
		case <-again.C:
		case <-arm.C:
			g.armDue()
		}
		if d, ok := g.nextArm(); ok {
			arm.Reset(d)
		}
		if g.round() {
			again.Reset(b.NextBackOff())
		} else {
			b.Reset()
		}
	}
}

// nextArm is how long until the holds taken are due to be read, if any are
// waiting.
func (g *guard) nextArm() (time.Duration, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.arming) == 0 {
		return 0, false
	}
	return max(time.Until(g.armAt), 0), true
}

// armDue marks the keys of the holds taken since the last arming, and still
// guarded, for the next round, once the first of them is armDelay old.
func (g *guard) armDue() {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	if now.Before(g.armAt) {
		return
	}
	for _, h := range g.arming {
		if _, ok := g.keys[h.cfg.Presence.Key][h]; ok {
			g.pending[h.cfg.Presence.Key] = struct{}{}
		}
	}
	g.arming = nil
}

// hinted takes the holds whose keys were hinted at since the last round,
// by key.
func (g *guard) hinted() []keyHolds {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []keyHolds
	for key, set := range g.keys {
		if _, ok := g.pending[key]; !ok && !g.all {
			continue
		}
		kh := keyHolds{key: key}
		for h := range set {
			if h.cfg.Presence.Members != nil {
				kh.zset = true
			}
			kh.holds = append(kh.holds, h)
		}
		out = append(out, kh)
	}
	clear(g.pending)
	g.all = false
	return out
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
// pipeline, and reports those found gone lost. It returns whether some
// reads failed: their keys are hinted at again, for a round after a backoff.
func (g *guard) round() (failed bool) {
	khs := g.hinted()
	if len(khs) == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(g.ctx, confirmTimeout)
	defer cancel()
	for i, r := range g.read(ctx, khs) {
		kh := khs[i]
		gone, err := absent(r, kh)
		if err != nil && retry.Classify(err) != retry.Final {
			failed = true
			g.later(kh.key)
			continue
		}
		for j, h := range kh.holds {
			if (retry.HasCode(err, "WRONGTYPE") || (err == nil && gone[j])) && h.guarded() {
				why := "not there"
				if err != nil {
					why = err.Error() // a key of another type written over it
				}
				h.Lose(Errorf("hold", h.cfg.Name, "%w: gone from Redis (%s, read after an invalidation of %s)",
					lease.ErrLost, why, kh.key))
			}
		}
	}
	return failed
}

// read reads the presence of the holds of each key in one pipeline, as
// reads that Redis tracks for the connection (CLIENT CACHING YES before
// each: rueidis opts in to tracking). On one connection (a single Redis,
// Sentinel) that is two commands a key; in Redis Cluster, where a command
// without a key could go to another node than the read it opts in for,
// rueidis' own cached reads, five (CLIENT CACHING YES, MULTI, PTTL, the
// read, EXEC).
func (g *guard) read(ctx context.Context, khs []keyHolds) []rueidis.RedisResult {
	if g.rc.Mode() == rueidis.ClientModeCluster {
		cmds := make([]rueidis.CacheableTTL, len(khs))
		for i, kh := range khs {
			cmds[i] = rueidis.CT(presenceCmd(g.rc, kh), g.ttl)
		}
		return g.rc.DoMultiCache(ctx, cmds...)
	}
	cmds := make(rueidis.Commands, 0, 2*len(khs))
	for _, kh := range khs {
		// rueidis writes a DoMulti's commands in a row on its connection:
		// nothing comes between the opt-in and its read.
		cmds = append(cmds, g.rc.B().ClientCaching().Yes().Build(), presenceRead(g.rc, kh))
	}
	res := g.rc.DoMulti(ctx, cmds...)
	out := make([]rueidis.RedisResult, len(khs))
	for i := range khs {
		out[i] = res[2*i+1]
		if err := res[2*i].Error(); err != nil {
			out[i] = res[2*i] // not tracked: the read's answer cannot stand
		}
	}
	return out
}

// presenceCmd is the read of the holds of one key: HMGET of their fields,
// or ZMSCORE of their members.
func presenceCmd(rc rueidis.Client, kh keyHolds) rueidis.Cacheable {
	if kh.zset {
		return rc.B().Zmscore().Key(kh.key).Member(kh.names()...).Cache()
	}
	return rc.B().Hmget().Key(kh.key).Field(kh.names()...).Cache()
}

// presenceRead is the same read, to send after CLIENT CACHING YES.
func presenceRead(rc rueidis.Client, kh keyHolds) rueidis.Completed {
	if kh.zset {
		return rc.B().Zmscore().Key(kh.key).Member(kh.names()...).Build()
	}
	return rc.B().Hmget().Key(kh.key).Field(kh.names()...).Build()
}

// absent reads the reply to presenceCmd(kh): whether each hold is gone
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
