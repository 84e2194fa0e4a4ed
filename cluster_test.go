package leasehold_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

// clusterKinds are the lock kinds the cluster tests hold through slot moves
// and failovers.
var clusterKinds = []struct {
	name string
	new  func(c *leasehold.Client, name string) lease.Locker
}{
	{"rlock", func(c *leasehold.Client, name string) lease.Locker { return rlock.New(c, name) }},
	{"fair", func(c *leasehold.Client, name string) lease.Locker { return fairqueue.New(c, name) }},
}

// contender is a third party that tries to take a lock every few ms with
// TryAcquire while it should be held by someone else. It records every
// lease it got (mutual exclusion broken, unless the holder had lost its
// lease) and every error, and the longest time without an answer from Redis
// (ErrNotAcquired is an answer): the unavailability a client of the slot saw.
type contender struct {
	l    lease.Locker
	stop chan struct{}
	once sync.Once
	done chan struct{}

	mu       sync.Mutex
	got      []time.Time    // when a TryAcquire succeeded
	errs     map[string]int // other errors, by shortErr
	answered time.Time      // last answer
	gap      time.Duration  // longest time without an answer
	tries    int
}

func contend(l lease.Locker) *contender {
	p := &contender{l: l, stop: make(chan struct{}), done: make(chan struct{}), errs: map[string]int{}, answered: time.Now()}
	go p.run()
	return p
}

func (p *contender) run() {
	defer close(p.done)
	for {
		select {
		case <-p.stop:
			return
		case <-time.After(5 * time.Millisecond):
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		ls, err := p.l.TryAcquire(ctx)
		cancel()
		now := time.Now()
		p.mu.Lock()
		p.tries++
		switch {
		case err == nil:
			p.got = append(p.got, now)
		case errors.Is(err, lease.ErrNotAcquired):
		default:
			p.errs[shortErr(err)]++
		}
		if err == nil || errors.Is(err, lease.ErrNotAcquired) {
			if gap := now.Sub(p.answered); gap > p.gap {
				p.gap = gap
			}
			p.answered = now
		}
		p.mu.Unlock()
		if ls != nil {
			_ = ls.Release(context.Background())
		}
	}
}

// end stops the contender; it reports what it saw.
func (p *contender) end() (got []time.Time, errs map[string]int, gap time.Duration, tries int) {
	p.once.Do(func() { close(p.stop) })
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.got, p.errs, p.gap, p.tries
}

// shortErr is an error's message without the lock's name, for counting.
func shortErr(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, "\": "); i >= 0 {
		s = s[i+3:]
	}
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

func fmtErrs(errs map[string]int) string {
	if len(errs) == 0 {
		return "none"
	}
	var out []string
	for e, n := range errs {
		out = append(out, fmt.Sprintf("%dx %q", n, e))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// Live resharding (issue 17): the slot of a held lock moves to another
// primary while the lock is held, renewed and waited on, as redis-cli
// --cluster reshard moves it (SETSLOT IMPORTING and MIGRATING, MIGRATE in
// batches, SETSLOT NODE). The holder keeps it (its renewals follow the slot:
// rueidis follows MOVED and ASK), a third Client never gets it, and the
// waiter, on another Client, gets it when it is released: after the move,
// and while the slot is migrating. Moved one key per MIGRATE, as a slot
// holding many keys is, a lock's keys lie on both nodes for a while, and
// Redis answers its multi-key scripts TRYAGAIN meanwhile.
func TestClusterReshard(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	const watchdog = time.Second
	for _, k := range clusterKinds {
		for _, tt := range []struct {
			name      string
			batch     int  // keys per MIGRATE
			migrating bool // released while the slot is migrating
		}{
			{"whole slot per MIGRATE", 10, false},
			{"one key per MIGRATE", 1, false},
			{"released mid-migration", 10, true},
		} {
			t.Run(k.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				cl := cl.For(t)
				open := func() *leasehold.Client {
					return locktest.OpenAt(t, cl.Option(), leasehold.WithWatchdog(watchdog))
				}
				holder, waiter, third := open(), open(), open()
				ctx := locktest.Ctx(t, time.Minute)
				name := fmt.Sprintf("reshard-%s{%s}", k.name, t.Name()) // a slot of its own
				slot := cl.KeySlot(name)
				from := cl.Owner(slot)
				var to *redistest.Server
				for _, p := range cl.Primaries() {
					if p != from {
						to = p
						break
					}
				}
				ls := locktest.MustAcquire(t, k.new(holder, name), ctx)
				f := k.new(waiter, name).AcquireAsync(ctx)
				locktest.Eventually(t, 5*time.Second, "the waiter waiting", func() bool { return waiter.Stats().Waiters == 1 })
				p := contend(k.new(third, name))
				defer p.end()
				step := func(what string) {
					t.Helper()
					d := ls.Deadline()
					locktest.Eventually(t, 3*watchdog, "a renewal once "+what, func() bool { return ls.Deadline().After(d) || locktest.IsLost(ls) })
					if locktest.IsLost(ls) {
						t.Fatalf("lease lost once %s: %v", what, ls.Err())
					}
					select {
					case <-f.Done():
						_, err := f.Result()
						t.Fatalf("the waiter returned once %s: %v", what, err)
					default:
					}
				}
				step("held")
				m := cl.BeginMigration(slot, to)
				step("the slot migrating")
				for i := 1; m.MoveKeys(tt.batch) > 0; i++ {
					step(fmt.Sprintf("%d MIGRATE", i))
				}
				if !tt.migrating {
					m.Finish()
					step("the slot moved")
				}
				sent := time.Now() // nobody else may have the lock before
				released := make(chan error, 1)
				go func() { released <- ls.Release(ctx) }()
				if tt.migrating {
					// Redis refuses a script some of whose keys are missing
					// (the release's latch, the channel Redisson's layout
					// passes as a key) until the slot has moved: a release
					// waits for the end of the migration, here 200ms away.
					time.Sleep(200 * time.Millisecond)
					m.Finish()
				}
				if err := <-released; err != nil {
					t.Errorf("Release: %v", err)
				}
				rel := time.Now()
				got, err := f.Result()
				if err != nil {
					t.Fatalf("waiter: %v", err)
				}
				// Missed, the release would still be found by the waiter's
				// timer, set to the TTL it saw (up to the 1s lease).
				woke := time.Since(rel)
				took := rel.Sub(sent)
				// An rlock waiter is woken by the message or by the
				// invalidation of the lock key. A fair waiter listens on its
				// own channel only: once its slot has moved, the old node
				// ends its sharded subscription, and rueidis makes it again
				// on the new node only once it has refreshed its slot map
				// (retrying the MOVED SSUBSCRIBE with backoff); a release in
				// between reaches the waiter when it is subscribed again, or
				// at its refresh timer. Seen: 0.1-3.1s; 5s is still far below
				// the lease it would otherwise wait out.
				bound := watchdog / 4
				if k.name == "fair" {
					bound = 5 * time.Second
				}
				if woke > bound {
					t.Errorf("the waiter got the lock %v after the release, later than %v", woke.Round(time.Millisecond), bound)
				}
				if tt.migrating {
					d := got.Deadline()
					locktest.Eventually(t, 3*watchdog, "the new holder renewed once the slot moved", func() bool { return got.Deadline().After(d) || locktest.IsLost(got) })
				}
				won, errs, gap, tries := p.end()
				for _, at := range won {
					if at.Before(sent) {
						t.Errorf("a third Client took the lock %v before the release", sent.Sub(at))
					}
				}
				if got.Token() <= ls.Token() {
					t.Errorf("the waiter's token %d is not above the holder's %d", got.Token(), ls.Token())
				}
				if locktest.IsLost(ls) || locktest.IsLost(got) {
					t.Errorf("a lease was lost: holder %v, waiter %v", ls.Err(), got.Err())
				}
				t.Logf("slot %d moved from %s to %s; the holder was renewed throughout; the release took %v; the waiter woke %v after it; "+
					"third Client: %d tries, none got it, longest time without an answer %v, errors: %s",
					slot, from.Addr(), to.Addr(), took.Round(time.Millisecond), woke.Round(time.Millisecond), tries, gap.Round(time.Millisecond), fmtErrs(errs))
				locktest.Release(t, got)
			})
		}
	}
}

// leaseLog records, per owner, when the keeper confirmed a renewal and when
// a lease was lost, as a Client's Observer hears it.
type leaseLog struct {
	mu       sync.Mutex
	renewals map[string][]time.Time
	lost     map[string]time.Time
}

func newLeaseLog() *leaseLog {
	return &leaseLog{renewals: map[string][]time.Time{}, lost: map[string]time.Time{}}
}

func (l *leaseLog) Observe(e lease.Event) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	switch e.Kind {
	case lease.Renewed:
		l.renewals[e.Owner] = append(l.renewals[e.Owner], now)
	case lease.Lost:
		if _, ok := l.lost[e.Owner]; !ok {
			l.lost[e.Owner] = now
		}
	}
}

// renewedAfter is the first renewal of owner confirmed after t, if any.
func (l *leaseLog) renewedAfter(owner string, t time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, at := range l.renewals[owner] {
		if at.After(t) {
			return at, true
		}
	}
	return time.Time{}, false
}

// lostAt is when owner's lease was lost, if it was.
func (l *leaseLog) lostAt(owner string) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.lost[owner]
	return at, ok
}

// waiting is a waiter that, as a service would, calls Acquire again when it
// fails for another reason than its ctx, until it holds the lock.
type waiting struct {
	done chan struct{}
	ls   *lease.Lease
	at   time.Time      // when it got the lock
	errs map[string]int // the errors of the Acquire calls that failed
	// unexpected counts the errors other than ErrNotReplicated.
	unexpected int
	stopped    bool // its ctx ended first
}

func waitOn(ctx context.Context, l lease.Locker) *waiting {
	w := &waiting{done: make(chan struct{}), errs: map[string]int{}}
	go func() {
		defer close(w.done)
		for {
			ls, err := l.Acquire(ctx)
			switch {
			case err == nil:
				w.ls, w.at = ls, time.Now()
				return
			case ctx.Err() != nil:
				w.stopped = true
				return
			}
			w.errs[shortErr(err)]++
			if errors.Is(err, lease.ErrNotReplicated) {
				// No replica to acknowledge it: none will, until one joins.
				return
			}
			w.unexpected++
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return w
}

// failoverLock is one lock held through a failover, its waiter and a third
// Client contending for it, and what each saw.
type failoverLock struct {
	label    string
	watchdog time.Duration
	log      *leaseLog
	ls       *lease.Lease
	w        *waiting
	c        *contender
	// fresh: taken just before the fault, and never replicated (Unlink).
	fresh bool
	// replicated: its Client waits for a replica on each acquisition and
	// renewal (WithReplicas). Without it, the last renewals may not have
	// reached the replica either: after a kill -9 the promoted replica can
	// let the lock run out before the holder's own deadline, the same
	// documented loss as a lock that never reached it.
	replicated bool
}

// failoverClients are a holder's and a waiter's Client with the same
// Options, and the log of the holder's leases.
type failoverClients struct {
	name           string
	watchdog       time.Duration
	replicas       bool
	holder, waiter *leasehold.Client
	log            *leaseLog
}

// Cluster failover (issue 17): a 3-primary cluster with one replica each;
// the primary of the slot of held locks fails, gracefully (CLUSTER FAILOVER
// on its replica) and then with kill -9. Each lock has a holder, a waiter on
// another Client and a third Client that tries to take it every few ms; the
// holders' Clients have a lease of 5s, one the failover cannot outlast (1s),
// and 5s with WithReplicas(1, ...). A lock on another primary shows what
// the rest of the cluster sees meanwhile. Before the kill, a lock is taken
// on the primary while its replica is cut off (Unlink): the case
// WithReplicas is for. Every Client must keep mutual exclusion wherever its
// lock had reached the replica; what each holder and waiter saw, and how long
// the slot did not answer, are logged.
func TestClusterFailover(t *testing.T) {
	cl := redistest.StartClusterReplicas(t, 3, 1)
	const tag = "{failover}"
	slot := cl.KeySlot(tag)
	ctx := locktest.Ctx(t, 2*time.Minute)

	var sets []*failoverClients
	for _, v := range []struct {
		name     string
		watchdog time.Duration
		opts     []leasehold.Option
	}{
		{"5s lease", 5 * time.Second, nil},
		{"1s lease", time.Second, nil},
		{"5s lease, WithReplicas(1, 300ms)", 5 * time.Second, []leasehold.Option{leasehold.WithReplicas(1, 300*time.Millisecond)}},
	} {
		fc := &failoverClients{name: v.name, watchdog: v.watchdog, replicas: len(v.opts) > 0, log: newLeaseLog()}
		opts := append([]leasehold.Option{leasehold.WithWatchdog(v.watchdog)}, v.opts...)
		var err error
		if fc.holder, err = leasehold.Open(cl.Option(), append(opts, leasehold.WithObserver(fc.log))...); err != nil {
			if errors.Is(err, lease.ErrInvalid) {
				t.Logf("%s: refused in Redis Cluster: %v", v.name, err)
				continue
			}
			t.Fatal(err)
		}
		t.Cleanup(func() { fc.holder.Close() })
		fc.waiter = locktest.OpenAt(t, cl.Option(), opts...)
		sets = append(sets, fc)
	}
	third := locktest.OpenAt(t, cl.Option(), leasehold.WithWatchdog(5*time.Second))
	rc := cl.Client()

	for _, phase := range []struct {
		name string
		kill bool
	}{{"CLUSTER FAILOVER", false}, {"kill -9", true}} {
		t.Run(phase.name, func(t *testing.T) {
			cl := cl.For(t)
			ctx, stop := context.WithCancel(ctx)
			defer stop()
			// From a healthy cluster: after the previous phase's failover,
			// the old primary is in sync again.
			cl.AwaitReplicas(20 * time.Second)
			owner := cl.Owner(slot)
			var locks []*failoverLock
			hold := func(fc *failoverClients, kind int, name string) *failoverLock {
				k := clusterKinds[kind]
				fl := &failoverLock{label: fc.name + ", " + k.name, watchdog: fc.watchdog, log: fc.log, replicated: fc.replicas}
				fl.ls = locktest.MustAcquire(t, k.new(fc.holder, name), ctx)
				fl.w = waitOn(ctx, k.new(fc.waiter, name))
				fl.c = contend(k.new(third, name))
				t.Cleanup(func() { fl.c.end() })
				locks = append(locks, fl)
				return fl
			}
			for _, fc := range sets {
				for kind := range clusterKinds {
					hold(fc, kind, fmt.Sprintf("%s/%s/%s%s", phase.name, fc.name, clusterKinds[kind].name, tag))
				}
			}
			// A bystander: a lock on another primary.
			for i := 0; ; i++ {
				name := fmt.Sprintf("%s/bystander{b%d}", phase.name, i)
				if cl.Owner(cl.KeySlot(name)) != owner {
					hold(sets[0], 0, name).label = sets[0].name + ", rlock on another primary"
					break
				}
			}
			waiting := func() bool {
				for _, fc := range sets {
					want := 0
					for _, fl := range locks {
						if fl.log == fc.log {
							want++
						}
					}
					if fc.waiter.Stats().Waiters != want {
						return false
					}
				}
				return true
			}
			locktest.Eventually(t, 10*time.Second, "every waiter waiting", waiting)

			var relink func()
			if phase.kill {
				// The lock WithReplicas exists for: taken on the primary
				// while no replica can have it, just before the primary dies.
				relink = cl.Unlink(cl.Replica(owner))
				for _, fc := range sets {
					name := "fresh/" + fc.name + tag
					if fc.replicas {
						actx, cancel := context.WithTimeout(ctx, 2*time.Second)
						_, err := rlock.New(fc.holder, name).Acquire(actx)
						cancel()
						t.Logf("%s, rlock taken while the replica was cut off: %v", fc.name, err)
						if !errors.Is(err, lease.ErrNotReplicated) {
							t.Errorf("%s: Acquire with the replica cut off = %v, want ErrNotReplicated", fc.name, err)
						}
						continue
					}
					if fc.watchdog == 5*time.Second {
						hold(fc, 0, name).fresh = true
					}
				}
			}
			at := time.Now()
			if phase.kill {
				cl.Kill(owner)
				relink()
				owner = cl.AwaitOwner(slot, owner, 20*time.Second)
			} else {
				cl.Failover(cl.Replica(owner), 20*time.Second)
				owner = cl.Owner(slot)
			}
			agreed := time.Since(at)
			t.Logf("%s: every node names %s the primary of slot %d %v after the fault", phase.name, owner.Addr(), slot, agreed.Round(time.Millisecond))

			// Each holder renews on the new primary, or loses its lease.
			settled := func() bool {
				for _, fl := range locks {
					_, lost := fl.log.lostAt(fl.ls.Owner())
					_, renewed := fl.log.renewedAfter(fl.ls.Owner(), at.Add(agreed))
					if !lost && !renewed {
						return false
					}
				}
				return true
			}
			locktest.Eventually(t, 15*time.Second, "every holder renewed on the new primary or lost", settled)
			released := map[*failoverLock]time.Time{}
			for _, fl := range locks {
				if locktest.IsLost(fl.ls) {
					continue
				}
				// Others may have it once the release has run in Redis,
				// before Release returns.
				released[fl] = time.Now()
				if err := fl.ls.Release(ctx); err != nil {
					t.Errorf("%s: Release: %v", fl.label, err)
				}
			}
			// A waiter gets a released lock at once, and a lost one once it
			// has run out in Redis: 2s is enough, but for a lock that
			// renewals nobody counted kept alive (WithReplicas, no replica
			// left), which the waiter is still waiting for then.
			giveUp := time.NewTimer(2 * time.Second)
			defer giveUp.Stop()
		waiters:
			for _, fl := range locks {
				select {
				case <-fl.w.done:
				case <-giveUp.C:
					break waiters
				}
			}
			stopped := time.Now()
			stop()
			for _, fl := range locks {
				<-fl.w.done
			}
			for _, fl := range locks {
				fl.report(t, rc, at, released[fl], stopped)
			}
		})
	}
}

// report logs what fl's holder, waiter and third Client saw, the times from
// the fault at at; released is when its holder released it (zero if it did
// not), stopped when the waiters still waiting were stopped. It fails the
// test where two of them held the lock at once (but for a lock that had not
// reached the replica, the documented loss), where a token went back, and
// where a waiter's Acquire failed for want of Redis or was not woken by the
// release.
func (fl *failoverLock) report(t *testing.T, rc rueidis.Client, at, released, stopped time.Time) {
	t.Helper()
	ms := func(t time.Time) string { return "+" + t.Sub(at).Round(time.Millisecond).String() }
	won, errs, gap, tries := fl.c.end()
	owner := fl.ls.Owner()
	var holder string
	end := released
	if lostAt, ok := fl.log.lostAt(owner); ok {
		end = lostAt
		holder = fmt.Sprintf("lost its lease at %s (%v)", ms(lostAt), fl.ls.Err())
	} else {
		r, _ := fl.log.renewedAfter(owner, at)
		holder = fmt.Sprintf("kept its lease: first renewal confirmed after the fault at %s, released at %s", ms(r), ms(end))
	}
	if end.IsZero() {
		t.Errorf("%s: neither released nor lost", fl.label)
	}

	waiter := "never got it"
	switch {
	case fl.w.ls != nil:
		defer func() { _ = fl.w.ls.Release(context.Background()) }()
		waiter = fmt.Sprintf("got it at %s", ms(fl.w.at))
		if woke := fl.w.at.Sub(released); !released.IsZero() {
			waiter += fmt.Sprintf(", %v after the release", woke.Round(time.Millisecond))
			// Missed, the release would be found by the waiter's timer,
			// set to the TTL it saw: up to the lease.
			if woke > fl.watchdog/4 {
				t.Errorf("%s: the waiter got the lock %v after the release: not woken by it", fl.label, woke.Round(time.Millisecond))
			}
		}
		waiter += fmt.Sprintf(", token %d after %d", fl.w.ls.Token(), fl.ls.Token())
		if fl.w.ls.Token() <= fl.ls.Token() {
			t.Errorf("%s: the waiter's token %d is not above the holder's %d", fl.label, fl.w.ls.Token(), fl.ls.Token())
		}
	case fl.w.stopped:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		pttl, err := rc.Do(ctx, rc.B().Pttl().Key(fl.ls.Name()).Build()).AsInt64()
		cancel()
		if err != nil {
			t.Fatalf("PTTL: %v", err)
		}
		waiter = fmt.Sprintf("still waiting when stopped at %s, the lock alive in Redis for %dms more", ms(stopped), pttl)
	}
	// With WithReplicas and no replica left, no lock can be had: Acquire
	// says so rather than wait. Any other failure is one of Redis that
	// Acquire should have waited out.
	if fl.w.unexpected > 0 {
		t.Errorf("%s: the waiter's Acquire failed meanwhile: %s", fl.label, fmtErrs(fl.w.errs))
	}
	if len(fl.w.errs) > 0 {
		waiter += " (Acquire failed: " + fmtErrs(fl.w.errs) + ")"
	}

	// Two holders at once: the waiter or the third Client got the lock
	// before its holder had released it or knew it lost.
	var overlaps []string
	if fl.w.ls != nil && fl.w.at.Before(end) {
		overlaps = append(overlaps, fmt.Sprintf("the waiter %v before", end.Sub(fl.w.at).Round(time.Millisecond)))
	}
	if len(won) > 0 && won[0].Before(end) {
		overlaps = append(overlaps, fmt.Sprintf("the third Client %v before", end.Sub(won[0]).Round(time.Millisecond)))
	}
	switch {
	case len(overlaps) > 0 && fl.fresh:
		t.Logf("%s: two holders, as documented for a lock that had not reached the replica: %s the holder knew", fl.label, strings.Join(overlaps, ", "))
	case len(overlaps) > 0 && !fl.replicated:
		t.Logf("%s: two holders, as documented without WithReplicas (the replica may miss the last renewals): %s the holder knew",
			fl.label, strings.Join(overlaps, ", "))
	case len(overlaps) > 0:
		t.Errorf("%s: two holders: %s the holder knew", fl.label, strings.Join(overlaps, ", "))
	}
	t.Logf("%s: holder %s; waiter %s; third Client: %d tries, longest %v without an answer, errors: %s",
		fl.label, holder, waiter, tries, gap.Round(time.Millisecond), fmtErrs(errs))
}
