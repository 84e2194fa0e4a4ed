package bench_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/partition"
	"github.com/leasehold/leasehold/rlock"
)

// 10. Partitions: n partitions split among m members, each member a Client
// of its own, by package partition (group) and by the loop teams build by
// hand (loop): each member goes over the n partitions' lock names every
// loopInterval and calls rlock's TryAcquire on those it does not hold,
// holding what it gets on the watchdog. Both lease for partLease and name
// partition P's lock NAME:P. An op is one run of the fleet's life, each
// event timed from the moment it is made until every partition runs again
// (and, for the group, each member runs its floor or ceil share):
//
//   - steady: the fleet settled, Redis' CPU time (INFO's used_cpu_user +
//     used_cpu_sys) and the scripts it ran, per second over partSteady;
//   - join (rebalance-s): a member joins; the loop never gives the joiner
//     anything (every partition is held and renewed), so it reports the
//     partitions the joiner runs after partJoinWait (joiner-parts);
//   - handover (handover-s): the member running the most stops: the
//     group's Run ends, the loop member stops and releases its locks;
//   - takeover (takeover-s): the member now running the most is cut off,
//     its Client's connections closed and new ones refused (cutLink: no
//     release, as kill -9 leaves them), partCutAfter after its Client began
//     a renewal round, and timed from the cut: its lease runs out about
//     partLease-partCutAfter after it.
//
// n is 64, 256 and 1,024 and m 2, 8 and 32 with -scale, the first of each
// without (CI's run).
func BenchmarkPartitions(b *testing.B) {
	srv := redistest.Start(b)
	for _, n := range scaleSizes(64, 256, 1024) {
		for _, m := range scaleSizes(2, 8, 32) {
			for _, kind := range []fleetKind{groupKind{}, loopKind{}} {
				b.Run(fmt.Sprintf("parts=%d/members=%d/%s", n, m, kind), func(b *testing.B) {
					var sum fleetTimes
					for range b.N {
						srv.Do("FLUSHALL")
						sum.add(runFleet(b, srv, kind, n, m))
					}
					sum.report(b)
				})
			}
		}
	}
}

const (
	partLease    = 3 * time.Second        // every member's watchdog
	loopInterval = 750 * time.Millisecond // the loop's sweeps: a takeover within the lease and a quarter
	partSteady   = 3 * time.Second        // the window of the steady state's cost
	partJoinWait = 3 * time.Second        // how long the loop's joiner is given
	partBound    = 60 * time.Second       // a fleet that does not settle in this fails the benchmark
	partCutAfter = 20 * time.Millisecond  // the cut follows the member's renewal round by this
)

// fleetKind makes the members of a fleet.
type fleetKind interface {
	fmt.Stringer
	// member starts a member of the fleet name of n partitions on c.
	member(c *leasehold.Client, name string, n int) fleetMember
	// balanced reports whether the fleet's settled state is reached: every
	// partition runs, and for the group each member runs its share.
	balanced(ms []fleetMember, n int) bool
}

// fleetMember is one member running.
type fleetMember interface {
	// running is how many partitions the member runs now.
	running() int
	// stop ends the member and waits for it: the group's Run returns, the
	// loop stops and releases what it holds.
	stop()
}

// fleetTimes are one run's results, or their sums over b.N runs.
type fleetTimes struct {
	runs                      int
	cpu                       time.Duration // Redis' CPU time in the steady window
	scripts, commands         int64         // scripts and commands Redis ran in it
	rebalance, handover, take time.Duration
	rebalanced                int // runs whose join reached balance
	joinerParts               int // the loop's joiner's partitions after partJoinWait
	// The events measured; unsettled is the one a run stopped at, if any.
	joined, handedOver, tookOver bool
	unsettled                    string
}

func (s *fleetTimes) add(t fleetTimes) {
	if s.runs == 0 {
		s.joined, s.handedOver, s.tookOver = true, true, true
	}
	s.runs++
	s.cpu += t.cpu
	s.scripts += t.scripts
	s.commands += t.commands
	s.rebalance += t.rebalance
	s.handover += t.handover
	s.take += t.take
	s.rebalanced += t.rebalanced
	s.joinerParts += t.joinerParts
	s.joined, s.handedOver, s.tookOver = s.joined && t.joined, s.handedOver && t.handedOver, s.tookOver && t.tookOver
	if t.unsettled != "" {
		s.unsettled = t.unsettled
	}
}

// report reports the events every run measured; a run that stopped at an
// event that did not settle is reported as unsettled-at-EVENT 1.
func (s *fleetTimes) report(b *testing.B) {
	per := func(v float64) float64 { return v / float64(s.runs) }
	window := partSteady.Seconds() * float64(s.runs)
	if s.unsettled != "start" {
		b.ReportMetric(float64(s.cpu.Microseconds())/1e3/window, "redis-cpu-ms/s")
		b.ReportMetric(float64(s.scripts)/window, "scripts/s")
		b.ReportMetric(float64(s.commands)/window, "redis-cmds/s")
	}
	switch {
	case !s.joined:
	case s.rebalanced == s.runs:
		b.ReportMetric(per(s.rebalance.Seconds()), "rebalance-s")
	default:
		b.ReportMetric(per(float64(s.joinerParts)), "joiner-parts")
	}
	if s.handedOver {
		b.ReportMetric(per(s.handover.Seconds()), "handover-s")
	}
	if s.tookOver {
		b.ReportMetric(per(s.take.Seconds()), "takeover-s")
	}
	if s.unsettled != "" {
		b.ReportMetric(1, "unsettled-at-"+s.unsettled)
	}
}

// runFleet runs one life of a fleet of m members over n partitions: settle,
// steady window, join, handover, takeover. It leaves nothing running.
func runFleet(b *testing.B, srv *redistest.Server, kind fleetKind, n, m int) fleetTimes {
	var t fleetTimes
	const name = "bench-parts"
	var members []*fleetEntry
	defer func() {
		for _, e := range members {
			e.link.heal() // the cut member's Close releases at once
			e.member.stop()
			e.c.Close()
		}
	}()
	start := func() *fleetEntry {
		e := &fleetEntry{link: new(cutLink)}
		opt := leaseholdOption(srv.Addr())
		opt.DialCtxFn = e.link.dial
		c, err := leasehold.Open(opt, leasehold.WithWatchdog(partLease))
		if err != nil {
			b.Fatal(err)
		}
		e.c, e.member = c, kind.member(c, name, n)
		members = append(members, e)
		return e
	}
	for range m {
		start()
	}
	live := append([]*fleetEntry(nil), members...)
	// settle waits for the live members' settled state; a fleet that does
	// not reach it within partBound (the loop on a Redis it saturates, whose
	// leases then lapse) ends the run there, saying so.
	settle := func(what string) bool {
		ms := make([]fleetMember, len(live))
		for i, e := range live {
			ms[i] = e.member
		}
		began := time.Now()
		for !kind.balanced(ms, n) {
			if time.Since(began) > partBound {
				t.unsettled = what
				b.Logf("%s: not settled within %v: %s", what, partBound, runningOf(ms))
				return false
			}
			time.Sleep(2 * time.Millisecond)
		}
		return true
	}
	if !settle("start") {
		return t
	}

	// The steady state's cost.
	time.Sleep(partLease / 2) // past the start's checks and first renewals
	before := redisCost(b, srv)
	time.Sleep(partSteady)
	after := redisCost(b, srv)
	t.cpu, t.scripts, t.commands = after.cpu-before.cpu, after.scripts-before.scripts, after.commands-before.commands

	// A member joins.
	began := time.Now()
	joiner := start()
	live = append(live, joiner)
	if _, isLoop := kind.(loopKind); isLoop {
		time.Sleep(partJoinWait)
		t.joinerParts = joiner.member.running()
	} else {
		if !settle("join") {
			return t
		}
		t.rebalance, t.rebalanced = time.Since(began), 1
	}
	t.joined = true

	// The member running the most stops: its partitions handed over.
	leaver := busiest(live)
	live = without(live, leaver)
	began = time.Now()
	leaver.member.stop()
	if !settle("handover") {
		return t
	}
	t.handover, t.handedOver = time.Since(began), true

	// The member now running the most is cut off, just after its renewal
	// round (counted as it begins; its scripts run within partCutAfter): its
	// lease then ends partLease after the round, about
	// partLease-partCutAfter after the cut, whatever the kind.
	victim := busiest(live)
	live = without(live, victim)
	rounds := victim.c.Stats().RenewalRounds
	for deadline := time.Now().Add(partLease); victim.c.Stats().RenewalRounds == rounds; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("the member to cut off (running %d) renewed nothing in %v", victim.member.running(), partLease)
		}
	}
	time.Sleep(partCutAfter)
	began = time.Now()
	victim.link.cut()
	if settle("takeover") {
		t.take, t.tookOver = time.Since(began), true
	}
	return t
}

// fleetEntry is a member of a fleet, its Client and the link its Client
// dials through.
type fleetEntry struct {
	c      *leasehold.Client
	link   *cutLink
	member fleetMember
}

// busiest is the member of es running the most partitions.
func busiest(es []*fleetEntry) *fleetEntry {
	best := es[0]
	for _, e := range es[1:] {
		if e.member.running() > best.member.running() {
			best = e
		}
	}
	return best
}

func without(es []*fleetEntry, x *fleetEntry) []*fleetEntry {
	var out []*fleetEntry
	for _, e := range es {
		if e != x {
			out = append(out, e)
		}
	}
	return out
}

// cutLink is a Client's network to Redis: cut closes its connections and
// refuses new ones, as the harness proxy's Refuse and Cut do (and as kill
// -9 leaves them: the server sees them closed, nothing is released), at no
// cost of forwarding while it is up; heal lets it dial again.
type cutLink struct {
	mu    sync.Mutex
	down  bool
	conns []net.Conn
}

func (l *cutLink) dial(ctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.down {
		return nil, fmt.Errorf("dial %s: cut off", addr)
	}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		l.conns = append(l.conns, conn)
	}
	return conn, err
}

func (l *cutLink) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = true
	for _, c := range l.conns {
		c.Close()
	}
	l.conns = nil
}

func (l *cutLink) heal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = false
}

func runningOf(ms []fleetMember) string {
	var s []string
	for _, m := range ms {
		s = append(s, strconv.Itoa(m.running()))
	}
	return "members run " + strings.Join(s, ", ")
}

// cost is what Redis has done so far.
type cost struct {
	cpu               time.Duration
	scripts, commands int64
}

// redisCost reads INFO: CPU time (user + sys), commands processed (those
// scripts call included), and script calls (EVAL, EVALSHA).
func redisCost(b *testing.B, srv *redistest.Server) cost {
	s, err := srv.Do("INFO", "cpu", "stats", "commandstats").ToString()
	if err != nil {
		b.Fatal(err)
	}
	var c cost
	for line := range strings.Lines(s) {
		key, value, _ := strings.Cut(strings.TrimSpace(line), ":")
		switch key {
		case "used_cpu_user", "used_cpu_sys":
			f, _ := strconv.ParseFloat(value, 64)
			c.cpu += time.Duration(f * float64(time.Second))
		case "total_commands_processed":
			c.commands, _ = strconv.ParseInt(value, 10, 64)
		case "cmdstat_eval", "cmdstat_evalsha":
			calls, _, _ := strings.Cut(strings.TrimPrefix(value, "calls="), ",")
			n, _ := strconv.ParseInt(calls, 10, 64)
			c.scripts += n
		}
	}
	return c
}

// groupKind is package partition: each member a Group's Run whose fns run
// until their ctx ends.
type groupKind struct{}

func (groupKind) String() string { return "group" }

func (groupKind) member(c *leasehold.Client, name string, n int) fleetMember {
	ctx, cancel := context.WithCancel(context.Background())
	g := &groupMember{g: partition.New(c, name, n), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(g.done)
		_ = g.g.Run(ctx, func(ctx context.Context, _ int) error {
			g.runs.Add(1)
			defer g.runs.Add(-1)
			<-ctx.Done()
			return nil
		})
	}()
	return g
}

func (groupKind) balanced(ms []fleetMember, n int) bool {
	lo, hi := n/len(ms), (n+len(ms)-1)/len(ms)
	total := 0
	for _, m := range ms {
		k := m.running()
		if k < lo || k > hi {
			return false
		}
		total += k
	}
	return total == n
}

type groupMember struct {
	g      *partition.Group
	runs   atomic.Int64
	cancel context.CancelFunc
	done   chan struct{}
}

func (g *groupMember) running() int { return int(g.runs.Load()) }

func (g *groupMember) stop() {
	g.cancel()
	<-g.done
}

// loopKind is the hand-built fleet: each member sweeps the n lock names
// every loopInterval and TryAcquires those it does not hold.
type loopKind struct{}

func (loopKind) String() string { return "tryacquire-loop" }

func (loopKind) member(c *leasehold.Client, name string, n int) fleetMember {
	ctx, cancel := context.WithCancel(context.Background())
	l := &loopMember{held: make([]*lease.Lease, n), cancel: cancel, done: make(chan struct{})}
	locks := make([]lease.Locker, n)
	for p := range locks {
		locks[p] = rlock.New(c, name+":"+strconv.Itoa(p))
	}
	go func() {
		defer close(l.done)
		tick := time.NewTicker(loopInterval)
		defer tick.Stop()
		for {
			for p, lk := range locks {
				if ctx.Err() != nil {
					return
				}
				if ls := l.get(p); ls != nil && ls.Err() == nil {
					continue // held: the watchdog renews it
				}
				// Held by another (lease.ErrNotAcquired), or Redis out
				// of reach (the cut member): tried at the next sweep.
				if ls, err := lk.TryAcquire(ctx); err == nil {
					l.set(p, ls)
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return l
}

func (loopKind) balanced(ms []fleetMember, n int) bool {
	total := 0
	for _, m := range ms {
		total += m.running()
	}
	return total == n
}

type loopMember struct {
	mu     sync.Mutex
	held   []*lease.Lease // by partition; nil, or lost, for none
	cancel context.CancelFunc
	done   chan struct{}
}

func (l *loopMember) get(p int) *lease.Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held[p]
}

func (l *loopMember) set(p int, ls *lease.Lease) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held[p] = ls
}

// running counts the leases held and not lost.
func (l *loopMember) running() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := 0
	for _, ls := range l.held {
		if ls != nil && ls.Err() == nil {
			k++
		}
	}
	return k
}

// stop ends the loop and releases what it holds, as a member shutting down
// cleanly does.
func (l *loopMember) stop() {
	l.cancel()
	<-l.done
	l.mu.Lock()
	held := append([]*lease.Lease(nil), l.held...)
	clear(l.held)
	l.mu.Unlock()
	var wg sync.WaitGroup
	for _, ls := range held {
		if ls != nil {
			wg.Go(func() { _ = ls.Release(context.Background()) })
		}
	}
	wg.Wait()
}
