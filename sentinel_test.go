package leasehold_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

// sentinelFault is a way for the primary of a Sentinel deployment to go.
type sentinelFault struct {
	name string
	// watchdog is the holder's lease: short, so that a lease no renewal
	// reaches on the new primary runs out within the test.
	watchdog time.Duration
	// fail makes the primary go and returns it.
	fail func(*redistest.Sentinel) *redistest.Server
}

var (
	// SENTINEL FAILOVER: the old primary stays up and takes writes until
	// the Sentinels make it a replica, 8 to 20s after the switch. Clients
	// move when their Sentinel announces +switch-master, which the Sentinel
	// that ran the failover does only once the other replica follows the
	// new primary, about 2s after the promotion.
	sentinelFailover = sentinelFault{"SENTINEL FAILOVER", 2 * time.Second, (*redistest.Sentinel).Failover}
	// kill -9 of the primary: found down after down-after-milliseconds
	// (1.5s), then a leader is elected and a replica promoted and
	// announced, 3 to 5s after the kill. The keeper retries failed renewals
	// with a backoff that grows to the renewal interval (a third of the
	// lease), so the first renewal on the new primary may come that much
	// later still. 10s leaves the lease room for both on a loaded machine.
	sentinelKill = sentinelFault{"kill -9 of the primary", 10 * time.Second, (*redistest.Sentinel).KillPrimary}
)

// sentinelRun is one fault under a holder, a waiter and a prober, each on a
// Client of its own reached through the Sentinels, and what each saw.
type sentinelRun struct {
	t      *testing.T
	sn     *redistest.Sentinel
	fault  sentinelFault
	name   string
	holder *leasehold.Client
	waiter *leasehold.Client
	prober *leasehold.Client

	mu       sync.Mutex
	renewals []time.Time // when the holder's renewals were confirmed
	probes   []probe

	at      time.Time         // when the fault was injected
	found   time.Time         // when every Sentinel had announced the new primary
	stopped time.Time         // when the prober stopped
	old     *redistest.Server // the primary the fault removed
	primary *redistest.Server // the one the Sentinels promoted
}

// probe is one acquisition of a fresh name by the prober.
type probe struct {
	name      string
	start, at time.Time // when the attempt began and returned
	ok        bool
}

// newSentinelRun starts a Sentinel deployment and the three Clients; opts
// are their Options.
func newSentinelRun(t *testing.T, fault sentinelFault, opts ...leasehold.Option) *sentinelRun {
	r := &sentinelRun{t: t, sn: redistest.StartSentinel(t), fault: fault, name: "sentinel-lock"}
	observe := lease.ObserverFunc(func(e lease.Event) {
		if e.Kind == lease.Renewed {
			r.mu.Lock()
			r.renewals = append(r.renewals, time.Now())
			r.mu.Unlock()
		}
	})
	opts = append([]leasehold.Option{leasehold.WithWatchdog(fault.watchdog)}, opts...)
	r.holder = locktest.OpenAt(t, r.sn.Option(), append(opts, leasehold.WithObserver(observe))...)
	r.waiter = locktest.OpenAt(t, r.sn.Option(), opts...)
	r.prober = locktest.OpenAt(t, r.sn.Option(), opts...)
	return r
}

// waiter waits for the lock on its own goroutine.
type waiter struct {
	done   chan struct{} // closed once ls or err is set
	cancel context.CancelFunc
	ls     *lease.Lease
	err    error
	at     time.Time // when it got the lock
	// unreplicated counts the acquisitions fewer replicas acknowledged
	// than WithReplicas asks: made on a primary that had lost its replicas
	// to the failover, released, and tried again.
	unreplicated int
}

// wait starts a waiter on the lock and returns once it waits.
func (r *sentinelRun) wait(ctx context.Context) *waiter {
	w := &waiter{done: make(chan struct{})}
	ctx, w.cancel = context.WithCancel(ctx)
	go func() {
		defer close(w.done)
		for {
			ls, err := rlock.New(r.waiter, r.name).Acquire(ctx)
			if errors.Is(err, lease.ErrNotReplicated) {
				w.unreplicated++
				continue
			}
			w.ls, w.err, w.at = ls, err, time.Now()
			return
		}
	}()
	locktest.Eventually(r.t, 5*time.Second, "the waiter waiting", func() bool { return r.waiter.Stats().Waiters == 1 })
	return w
}

// inject starts the prober, makes the primary go, calls then (if not nil)
// and waits until every Sentinel has announced a new primary that takes
// writes. stop stops the prober; it also stops when the test ends.
func (r *sentinelRun) inject(ctx context.Context, then func()) (stop func()) {
	pctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { r.probe(pctx) })
	stop = func() {
		cancel()
		wg.Wait()
		r.stopped = time.Now()
	}
	r.t.Cleanup(func() { cancel(); wg.Wait() }) // if the test fails first
	r.old = r.fault.fail(r.sn)
	r.at = time.Now()
	if then != nil {
		then()
	}
	r.primary = r.sn.AwaitPrimary(r.old, 20*time.Second)
	r.found = time.Now()
	return stop
}

// probe takes a fresh name every few ms, with a lease that outlasts the test,
// until ctx ends: whether locks can be taken, and where.
func (r *sentinelRun) probe(ctx context.Context) {
	for i := 0; ctx.Err() == nil; i++ {
		name := fmt.Sprintf("sentinel-probe-%d", i)
		actx, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
		start := time.Now()
		_, err := rlock.New(r.prober, name, leasehold.WithLeaseTime(time.Minute)).TryAcquire(actx)
		cancel()
		r.mu.Lock()
		r.probes = append(r.probes, probe{name, start, time.Now(), err == nil})
		r.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// since is how long after the fault t was.
func (r *sentinelRun) since(t time.Time) time.Duration { return t.Sub(r.at).Round(time.Millisecond) }

// renewalGap is the longest time, from the fault to end, between two
// confirmed renewals of the holder (or the fault, or end): how long after
// the fault its renewals failed, plus the wait for the first one due.
func (r *sentinelRun) renewalGap(acquired, end time.Time) time.Duration {
	r.mu.Lock()
	ts := append([]time.Time{acquired}, r.renewals...)
	r.mu.Unlock()
	ts = append(ts, end)
	var gap time.Duration
	for i := 1; i < len(ts); i++ {
		from := ts[i-1]
		if from.Before(r.at) {
			from = r.at
		}
		if ts[i].After(r.at) && from.Before(end) {
			gap = max(gap, ts[i].Sub(from))
		}
	}
	return gap.Round(time.Millisecond)
}

// waiterWindow is the longest time, from the fault until the prober
// stopped, in which no lock could be taken that the new primary kept: how
// long a waiter could not acquire; open if that time lasted until the prober
// stopped. stale counts the locks asked for after the fault that the new
// primary never had (taken on the old primary).
func (r *sentinelRun) waiterWindow() (window time.Duration, open bool, stale int) {
	r.mu.Lock()
	ps := slices.DeleteFunc(slices.Clone(r.probes), func(p probe) bool { return !p.ok || !p.at.After(r.at) })
	r.mu.Unlock()
	rc := r.primary.Client()
	cmds := make(rueidis.Commands, len(ps))
	for i, p := range ps {
		cmds[i] = rc.B().Exists().Key(p.name).Build()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	exists := rc.DoMulti(ctx, cmds...)
	last := r.at
	for i, p := range ps {
		if n, _ := exists[i].AsInt64(); n == 0 {
			if p.start.After(r.at) {
				stale++
			}
			continue
		}
		window = max(window, p.at.Sub(last))
		last = p.at
	}
	if tail := r.stopped.Sub(last); tail > window {
		window, open = tail, true
	}
	return window.Round(time.Millisecond), open, stale
}

// renewedThere reports whether the holder's lease was renewed on the new
// primary: a renewal confirmed after every Sentinel announced it, and the
// new primary has the hold, set there by a renewal sent to it as a primary
// (the lock expires more than a lease after the announcement; a copy from
// before the promotion expires earlier). The script alone is not enough: with
// WithReplicas a renewal the replicas do not acknowledge has run, but is not
// confirmed.
func (r *sentinelRun) renewedThere(ls *lease.Lease) bool {
	r.mu.Lock()
	confirmed := len(r.renewals) > 0 && r.renewals[len(r.renewals)-1].After(r.found)
	r.mu.Unlock()
	if !confirmed {
		return false
	}
	if n, _ := r.primary.Do("HEXISTS", r.name, ls.Owner()).AsInt64(); n != 1 {
		return false
	}
	// PTTL rather than PEXPIRETIME, which Redis 6.2 does not have; read
	// after the call, the expiry it gives is no later than the real one.
	pttl, err := r.primary.Do("PTTL", r.name).AsInt64()
	at := time.Now().Add(time.Duration(pttl) * time.Millisecond)
	return err == nil && pttl > 0 && at.After(r.found.Add(r.fault.watchdog))
}

// outcome waits, after the fault, until the holder's lease has either been
// renewed on the new primary (kept) or been lost, and then for the waiter:
// after the release if kept, or after the loss. patience, if not 0, is how
// long the waiter is given after that before it gives up. It fails the test
// if the waiter took the lock while the holder held it and was never told,
// or if the waiter's token is not above the holder's. It returns a line for
// the log and whether the waiter got the lock before the holder learnt it
// had lost it (two holders at once).
func (r *sentinelRun) outcome(ctx context.Context, ls *lease.Lease, acquired time.Time, w *waiter, patience time.Duration) (line string, overlap bool) {
	t := r.t
	t.Helper()
	// A lease no renewal reaches on the new primary runs out a lease after
	// the promotion at the latest, and the holder hears of it at its next
	// renewal or at its own deadline.
	limit := time.After(time.Until(r.found.Add(2 * r.fault.watchdog)))
	var lost, released time.Time
	for lost.IsZero() && !r.renewedThere(ls) {
		select {
		case <-ls.Lost():
			lost = time.Now()
		case <-limit:
			t.Fatalf("%v after the new primary was found, the lease is neither lost nor renewed there (its deadline is in %v)",
				2*r.fault.watchdog, time.Until(ls.Deadline()).Round(time.Millisecond))
		case <-time.After(5 * time.Millisecond):
		}
	}
	select {
	case <-w.done:
		if lost.IsZero() {
			// The waiter has the lock; the holder must be told it lost
			// it, at its deadline at the latest.
			select {
			case <-ls.Lost():
				lost = time.Now()
			case <-time.After(time.Until(ls.Deadline()) + time.Second):
				t.Fatalf("the waiter took the lock %v after the fault and the holder was never told it lost it", r.since(w.at))
			}
		}
	default:
	}
	if lost.IsZero() {
		released = time.Now()
		locktest.Release(t, ls)
	}
	holder := fmt.Sprintf("the holder kept the lease, renewed on the new primary (no renewal confirmed for %v after the fault; one is due every %v)",
		r.renewalGap(acquired, released), r.fault.watchdog/3)
	if !lost.IsZero() {
		holder = fmt.Sprintf("the holder lost the lease %v after the fault (%v; no renewal confirmed for %v after the fault)",
			r.since(lost), ls.Err(), r.renewalGap(acquired, lost))
	}
	if patience > 0 {
		select {
		case <-w.done:
		case <-time.After(patience):
			w.cancel()
			<-w.done
			if errors.Is(w.err, context.Canceled) {
				return fmt.Sprintf("%s; the waiter did not get the lock in the %v after (%d acquisitions no replica acknowledged)",
					holder, patience, w.unreplicated), false
			}
		}
	}
	<-w.done
	if w.err != nil {
		t.Fatalf("waiter: %v", w.err)
	}
	defer func() { _ = w.ls.Release(ctx) }()
	if w.ls.Token() <= ls.Token() {
		t.Errorf("the waiter's token %d is not above the holder's %d", w.ls.Token(), ls.Token())
	}
	retried := ""
	if w.unreplicated > 0 {
		retried = fmt.Sprintf(" (after %d acquisitions no replica acknowledged)", w.unreplicated)
	}
	if lost.IsZero() {
		return fmt.Sprintf("%s; the waiter got the lock %v after the release%s; tokens %d then %d",
			holder, w.at.Sub(released).Round(100*time.Microsecond), retried, ls.Token(), w.ls.Token()), false
	}
	overlap = w.at.Before(lost)
	when := "after it"
	if overlap {
		when = fmt.Sprintf("%v before it: two holders", lost.Sub(w.at).Round(time.Millisecond))
	}
	return fmt.Sprintf("%s; the waiter got the lock %v after the fault, %s%s; tokens %d then %d (fenced)",
		holder, r.since(w.at), when, retried, ls.Token(), w.ls.Token()), overlap
}

// report logs the run's figures.
func (r *sentinelRun) report(variant, line string) {
	window, open, stale := r.waiterWindow()
	atLeast := ""
	if open {
		atLeast = "at least "
	}
	r.t.Logf("%s, %s: every Sentinel announced the new primary %v after the fault; %s; a new lock could not be taken (and kept) for %s%v after the fault; %d taken after the fault were lost with the old primary",
		r.fault.name, variant, r.since(r.found), line, atLeast, window, stale)
}

// A watchdog lease taken through Sentinel, with a waiter on another Client,
// through SENTINEL FAILOVER. The old primary takes writes until its Clients
// hear +switch-master: a renewal confirmed there meanwhile never reaches the
// new primary, whose copy of the lock runs out a lease after the last renewal
// replicated before the promotion. So with a lease as short as the failover,
// whether the holder keeps the lock depends on where its renewals fell; the
// test records which, and when. Whatever happens, a holder is never replaced
// without being told: if the waiter got the lock first, the holder hears of
// the loss, and the waiter's token is above the holder's (the resource
// refuses the holder). With WithReplicas(2) no renewal is confirmed once the
// promoted replica has left the old primary, so the holder's deadline comes
// before the new primary's copy runs out: never two holders. WithReplicas(1)
// is not enough for that: the other replica acknowledges the old primary's
// writes until the Sentinels move it.
func TestSentinelFailover(t *testing.T) {
	for _, tt := range []struct {
		name      string
		opts      []leasehold.Option
		exclusive bool // no second holder before the release or the loss
		// patience is how long the waiter is given after the release or
		// the loss: with WithReplicas(2), no lock can be taken until the
		// Sentinels make the old primary a replica, 8s after the switch at
		// the soonest, so the test does not wait for that.
		patience time.Duration
	}{
		{"plain", nil, false, 0},
		{"WithReplicas(1)", []leasehold.Option{leasehold.WithReplicas(1, 500*time.Millisecond)}, false, 0},
		{"WithReplicas(2)", []leasehold.Option{leasehold.WithReplicas(2, 500*time.Millisecond)}, true, 2 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newSentinelRun(t, sentinelFailover, tt.opts...)
			ctx := locktest.Ctx(t, time.Minute)
			ls := locktest.MustAcquire(t, rlock.New(r.holder, r.name), ctx)
			acquired := time.Now()
			w := r.wait(ctx)
			stop := r.inject(ctx, nil)
			line, overlap := r.outcome(ctx, ls, acquired, w, tt.patience)
			stop()
			if overlap && tt.exclusive {
				t.Errorf("two holders: %s", line)
			}
			r.report(tt.name, line)
		})
	}
}

// kill -9 of the primary right after an acquisition that its replicas have
// not received. On loopback a replica has every write within microseconds,
// so the test holds replication back: the replicas are stopped (SIGSTOP) and
// their links cut (CLIENT KILL TYPE replica) before the acquisition. Without
// WithReplicas the acquisition returns at once, the primary dies before the
// replicas run again, and the promoted replica never had the lock: the
// holder's next renewal, on the new primary, finds it gone and the holder is
// told (Lost); a waiter takes it there, with a higher token (drawn from the
// server clock, the counter being gone too), so the resource refuses the
// first holder. The test measures whether the waiter got it before the holder
// heard. With WithReplicas(1, ...), the acquisition returns only once a
// replica has it (the replicas run again while it waits); the promoted replica
// keeps the lock, the holder's lease is renewed on it, and the waiter gets
// the lock only once the holder releases it.
func TestSentinelKillPrimary(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []leasehold.Option
		kept bool
	}{
		{"plain", nil, false},
		{"WithReplicas(1)", []leasehold.Option{leasehold.WithReplicas(1, 2*time.Second)}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newSentinelRun(t, sentinelKill, tt.opts...)
			ctx := locktest.Ctx(t, time.Minute)
			primary, replicas := r.sn.Primary(), r.sn.Replicas()
			resume := func() {
				for _, n := range replicas {
					n.Resume()
				}
			}
			for _, n := range replicas {
				n.Pause()
			}
			if err := primary.Do("CLIENT", "KILL", "TYPE", "replica").Error(); err != nil {
				t.Fatal(err)
			}
			f := rlock.New(r.holder, r.name).AcquireAsync(ctx)
			locktest.Eventually(t, 5*time.Second, "the lock on the primary", func() bool {
				n, _ := primary.Do("EXISTS", r.name).AsInt64()
				return n == 1
			})
			if tt.kept {
				resume() // WAIT holds the acquisition until a replica has it
			}
			ls, err := f.Result()
			if err != nil {
				t.Fatal(err)
			}
			acquired := time.Now()
			w := r.wait(ctx)
			had := 0 // replicas that had the lock when the primary died
			stop := r.inject(ctx, func() {
				if !tt.kept {
					resume() // within down-after-milliseconds: they stay eligible
				}
				for _, n := range replicas {
					if n, _ := n.Do("EXISTS", r.name).AsInt64(); n == 1 {
						had++
					}
				}
				if (had > 0) != tt.kept {
					t.Fatalf("%d of %d replicas had the lock when the primary died", had, len(replicas))
				}
			})
			line, overlap := r.outcome(ctx, ls, acquired, w, 0)
			stop()
			switch {
			case tt.kept && (locktest.IsLost(ls) || overlap):
				t.Errorf("the lock was not kept: %s", line)
			case !tt.kept && !locktest.IsLost(ls):
				t.Errorf("the holder was not told it lost the lock: %s", line)
			}
			r.report(tt.name, fmt.Sprintf("the lock was on %d of %d replicas when the primary died; %s", had, len(replicas), line))
		})
	}
}
