package core

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"golang.org/x/sync/errgroup"

	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/internal/retry"
	"github.com/leasehold/leasehold/lease"
)

// Keeper keeps a Client's holds: one goroutine renews every watchdog hold in
// batches, one pipelined round of renewal scripts per tick (watchdog/3), rather
// than a timer per lock. Each hold also has a local deadline (last confirmed
// renewal + TTL, less a drift margin) after which it is lost even if Redis
// cannot be reached to say so.
type Keeper struct {
	rc       rueidis.Client
	sharded  bool // rc's scripts publish with SPUBLISH (lua.Sharded)
	interval time.Duration
	ctx      context.Context // cancelled by Close: aborts a renewal round in flight
	stop     context.CancelFunc
	done     chan struct{}
	rounds   atomic.Uint64
	// replicas, when positive, must acknowledge each round (WAIT), within
	// replicaTimeout, for the round to confirm anything.
	replicas       int
	replicaTimeout time.Duration

	guard  *guard // nil without tracking
	hint   func(keys []string)
	places *places

	mu     sync.Mutex
	holds  map[*Hold]struct{}
	closed bool
}

// NewKeeper starts a keeper that renews watchdog holds on rc every
// watchdog/3, running the renewal scripts' sharded form when sharded is set
// (see Options.Sharded). Where the server offers CLIENT TRACKING it also
// guards every hold (see guard), on a connection of its own per node; where
// it does not, it warns of it through warn. Close stops it.
func NewKeeper(rc rueidis.Client, watchdog time.Duration, sharded bool, warn func(error), opts ...KeeperOption) *Keeper {
	ctx, stop := context.WithCancel(context.Background())
	k := &Keeper{
		rc:       rc,
		sharded:  sharded,
		interval: watchdog / 3,
		ctx:      ctx,
		stop:     stop,
		done:     make(chan struct{}),
		holds:    make(map[*Hold]struct{}),
		places:   newPlaces(),
	}
	for _, o := range opts {
		if o != nil {
			o.applyKeeper(k)
		}
	}
	k.guard = newGuard(rc, warn, k.hint)
	go k.run()
	return k
}

// A KeeperOption configures a Keeper in NewKeeper.
type KeeperOption interface{ applyKeeper(*Keeper) }

type keeperOptionFunc func(*Keeper)

func (f keeperOptionFunc) applyKeeper(k *Keeper) { f(k) }

// WaitReplicas makes every renewal round end with WAIT n timeout, in the same
// pipeline: a round that fewer than n replicas acknowledge confirms no hold,
// so their deadlines stay where they were and the round is retried, as after
// a lost reply. n <= 0 waits for none. Default: none.
func WaitReplicas(n int, timeout time.Duration) KeeperOption {
	return keeperOptionFunc(func(k *Keeper) { k.replicas, k.replicaTimeout = max(n, 0), timeout })
}

// Hints has hint hear the keys whose tracking on the keeper's connections
// ended (see guard.hint), the waiters' keys (Watch) among them. Default: none.
func Hints(hint func(keys []string)) KeeperOption {
	return keeperOptionFunc(func(k *Keeper) { k.hint = hint })
}

// Watch reads key, a waiter's lock key, on the connection the keeper tracks
// its holds on, so that Redis tells Hints of its next change; a key found
// gone is told to Hints at once. It does not block; without tracking it does
// nothing.
func (k *Keeper) Watch(key string) { k.guard.watch(key) }

// Unwatch drops the read of key that Watch asked for, if not made yet: its
// last waiter left. It does not block.
func (k *Keeper) Unwatch(key string) { k.guard.unwatch(key) }

// Track starts keeping h. sent is when the script that took the lock was
// sent: the local deadline runs from there. Watchdog holds (with a Renewal)
// are renewed each round from now on. Track returns an error wrapping
// ErrClosed once the keeper is closed; the caller then releases the lock.
func (k *Keeper) Track(h *Hold, sent time.Time) error {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return Errorf("acquire", h.cfg.Name, "%w", lease.ErrClosed)
	}
	k.holds[h] = struct{}{}
	k.mu.Unlock()
	h.mu.Lock()
	h.keeper = k
	h.mu.Unlock()
	h.startDeadline(sent)
	k.guard.add(h)
	return nil
}

// Tracked reports whether the keeper hears of a removal of its holds at
// once: the server offers it CLIENT TRACKING (see guard).
func (k *Keeper) Tracked() bool { return k.guard.tracked() }

// Len is the number of holds kept.
func (k *Keeper) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.holds)
}

// Rounds is the number of renewal rounds sent so far: one pipelined DoMulti
// each, whatever the number of holds (plus one EVAL round if Redis lost the
// scripts).
func (k *Keeper) Rounds() uint64 { return k.rounds.Load() }

func (k *Keeper) forget(h *Hold) {
	k.mu.Lock()
	delete(k.holds, h)
	k.mu.Unlock()
	k.guard.remove(h)
}

func (k *Keeper) run() {
	defer close(k.done)
	tick := time.NewTicker(k.interval)
	defer tick.Stop()
	// Renewals that failed for want of Redis are retried sooner than the next
	// tick, with backoff, so that one dropped reply does not cost a lease.
	again := time.NewTimer(time.Hour)
	again.Stop()
	// At most a quarter of the interval: after an outage (a failover takes
	// seconds) the first renewal that can succeed must come well before
	// the leases' deadlines, a whole lease after their last confirmation.
	b := retry.Backoff(k.interval/20, k.interval/4)
	var failed []*Hold
	// Waiters' places (see places) are kept on a timer of their own, set
	// to the first lock's due time.
	kept := time.NewTimer(time.Hour)
	kept.Stop()
	defer kept.Stop()
	for {
		select {
		case <-k.ctx.Done():
			again.Stop()
			return
		case <-tick.C:
			failed = k.round(k.renewable())
		case <-again.C:
			failed = k.round(failed)
		case <-k.places.added:
		case <-kept.C:
			k.keepPlaces()
		}
		if len(failed) > 0 {
			again.Reset(b.NextBackOff())
		} else {
			b.Reset()
		}
		if d, ok := k.places.next(); ok {
			kept.Reset(max(d, 0))
		} else {
			kept.Stop()
		}
	}
}

func (k *Keeper) renewable() []*Hold {
	k.mu.Lock()
	defer k.mu.Unlock()
	hs := make([]*Hold, 0, len(k.holds))
	for h := range k.holds {
		if h.renewable() {
			hs = append(hs, h)
		}
	}
	return hs
}

// round renews holds in one pipelined DoMulti and returns those whose renewal
// got no answer. With replicas to wait for, each slot's renewals go on a
// dedicated connection to its node, followed there by WAIT (see waited).
func (k *Keeper) round(hs []*Hold) (failed []*Hold) {
	if len(hs) == 0 {
		return nil
	}
	k.rounds.Add(1)
	ctx, cancel := context.WithTimeout(k.ctx, k.interval+k.replicaTimeout)
	defer cancel()
	sent := time.Now()
	var res []rueidis.RedisResult
	synced := make([]bool, len(hs))
	if k.replicas <= 0 {
		res = k.renew(ctx, k.rc, hs, false)
		for i := range synced {
			synced[i] = true
		}
	} else {
		res = k.waited(ctx, hs, synced)
	}
	took := time.Since(sent)
	for i, r := range res {
		h := hs[i]
		n, err := r.AsInt64()
		switch {
		case err != nil, n == 1 && !synced[i]:
			// No answer, or renewed on a primary whose replicas have not
			// all acknowledged it: unconfirmed, the deadline stays.
			failed = append(failed, h)
		case n == 1:
			h.confirm(sent)
			h.renewed(took, len(hs))
		case k.kept(h):
			// A hold released meanwhile is no longer kept; only a kept one
			// is lost when Redis says the owner is gone.
			h.gone(Errorf("hold", h.cfg.Name, "%w: renewal found the lock no longer held by this owner", lease.ErrLost))
		}
	}
	return failed
}

// renew runs the renewals of hs in one pipeline on c (see exec) and returns
// each renewal's reply, then WAIT's when wait is set.
func (k *Keeper) renew(ctx context.Context, c rueidis.CoreClient, hs []*Hold, wait bool) []rueidis.RedisResult {
	calls := make([]*lua.Call, len(hs))
	for i, h := range hs {
		calls[i] = h.renewal()
	}
	return k.exec(ctx, c, calls, wait)
}

// exec runs calls in one pipeline on c, then again by EVAL those the server
// answered NOSCRIPT (a new primary after a failover has no scripts), and
// returns each call's reply. With wait set, each pipeline ends with WAIT,
// whose reply comes last: c must then be one connection (WAIT counts the
// writes of its own connection), and the NOSCRIPT pipeline waits again.
func (k *Keeper) exec(ctx context.Context, c rueidis.CoreClient, calls []*lua.Call, wait bool) []rueidis.RedisResult {
	cmds := make(rueidis.Commands, len(calls), len(calls)+1)
	for i, call := range calls {
		cmds[i] = call.Cmd(c, k.sharded)
	}
	if wait {
		cmds = append(cmds, k.waitCmd(c))
	}
	res := c.DoMulti(ctx, cmds...)
	var again []int
	for i, r := range res[:len(calls)] {
		if lua.IsNoScript(r.Error()) {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return res
	}
	k.rounds.Add(1)
	evals := make(rueidis.Commands, len(again), len(again)+1)
	for j, i := range again {
		evals[j] = calls[i].Eval(c, k.sharded)
	}
	if wait {
		evals = append(evals, k.waitCmd(c))
	}
	res2 := c.DoMulti(ctx, evals...)
	for j, r := range res2[:len(again)] {
		res[again[j]] = r
	}
	if wait {
		res[len(calls)] = res2[len(again)] // the later WAIT covers both pipelines' writes
	}
	return res
}

// waited renews hs with replicas to wait for, and sets synced[i] for the
// holds whose renewal enough replicas acknowledged. WAIT counts the writes of
// the connection it runs on, so the renewals of each slot run on a dedicated
// connection to the slot's node (rueidis' Dedicate binds one to the slot of
// its first command; on a single Redis or under Sentinel there is one slot
// and one connection), followed there by WAIT. In Redis Cluster a round then
// costs one round trip per slot held, in parallel.
func (k *Keeper) waited(ctx context.Context, hs []*Hold, synced []bool) []rueidis.RedisResult {
	res := make([]rueidis.RedisResult, len(hs))
	bySlot := make(map[uint16][]int)
	for i, h := range hs {
		slot := uint16(0)
		if k.rc.Mode() == rueidis.ClientModeCluster {
			cmd := h.renewal().Cmd(k.rc, k.sharded)
			slot = cmd.Slot()
		}
		bySlot[slot] = append(bySlot[slot], i)
	}
	var g errgroup.Group
	g.SetLimit(16)
	for _, idx := range bySlot {
		g.Go(func() error {
			group := make([]*Hold, len(idx))
			for j, i := range idx {
				group[j] = hs[i]
			}
			dc, release := k.rc.Dedicate()
			defer release()
			r := k.renew(ctx, dc, group, true)
			n, err := r[len(group)].AsInt64()
			ok := err == nil && n >= int64(k.replicas)
			for j, i := range idx {
				res[i], synced[i] = r[j], ok
			}
			return nil
		})
	}
	_ = g.Wait()
	return res
}

// waitCmd is WAIT for the replicas the keeper must hear from.
func (k *Keeper) waitCmd(c rueidis.CoreClient) rueidis.Completed {
	return c.B().Wait().Numreplicas(int64(k.replicas)).Timeout(max(k.replicaTimeout.Milliseconds(), 1)).Build()
}

// kept reports whether h is kept and not being released.
func (k *Keeper) kept(h *Hold) bool {
	k.mu.Lock()
	_, ok := k.holds[h]
	k.mu.Unlock()
	return ok && h.renewable()
}

// Close stops renewing, reports every hold still kept lost with ErrClosed,
// then releases them in Redis, best effort, until ctx ends. It returns when
// the keeper's goroutine has ended; later Track calls fail with ErrClosed.
func (k *Keeper) Close(ctx context.Context) {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		<-k.done
		return
	}
	k.closed = true
	hs := make([]*Hold, 0, len(k.holds))
	for h := range k.holds {
		hs = append(hs, h)
	}
	k.mu.Unlock()
	k.stop()
	<-k.done
	// The guard may be making a connection, which rueidis dials without a
	// ctx: it ends while the locks are released, not before.
	guarded := make(chan struct{})
	go func() {
		defer close(guarded)
		k.guard.close()
	}()

	// Holders hear first, so they stop working before anyone else can take
	// the lock; then the locks are freed rather than left to run out.
	for _, h := range hs {
		h.Lose(Errorf("hold", h.cfg.Name, "%w", lease.ErrClosed))
	}
	var g errgroup.Group
	g.SetLimit(64)
	for _, h := range hs {
		g.Go(func() error {
			_ = h.giveUp(ctx, NewRequestID(), true) // best effort
			return nil
		})
	}
	_ = g.Wait()
	<-guarded
}
