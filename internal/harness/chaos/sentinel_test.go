package chaos

import (
	"math"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/harness/redistest"
)

// sentinelFaults are the ways the primary of a Sentinel deployment goes, each
// counted under its name in the figures.
var sentinelFaults = []struct {
	name string
	fail func(*redistest.Sentinel) *redistest.Server
	// rejoin: the old primary is dead, and is brought back, empty, as a
	// replica of the new one.
	rejoin bool
}{
	{"kill -9 Sentinel primary", (*redistest.Sentinel).KillPrimary, true},
	{"SENTINEL FAILOVER", (*redistest.Sentinel).Failover, false},
}

// Worker processes reach a Sentinel deployment (a primary, two replicas,
// three Sentinels, quorum 2) through rueidis' SentinelOption while its
// primary goes, by kill -9 (the killed node then rejoins, empty, as a
// replica) and by SENTINEL FAILOVER, in turn. Acquisitions and renewals fail
// until the Clients hear +switch-master. Under SENTINEL FAILOVER the old
// primary takes them meanwhile, and the new primary never has what it took
// after the promotion: a worker that takes the lock there and one that takes
// it on the new primary, as their Clients move at slightly different times,
// can both hold it. Tokens come from the servers' clock (one machine's), so
// the later holder's is the higher, but the fence refuses the earlier holder
// only if the later one writes first. Without WithReplicas this is the
// documented loss of a lock in a failover: such overlaps are counted apart.
// With WithReplicas(2), every replica, in the long form, no acquisition or
// renewal counts unless the replica the Sentinels promote has it, and the
// checker allows no unguarded overlap; the locks are unavailable while a
// replica is missing (until the killed node rejoins, and until the Sentinels
// make the old primary a replica, 8 to 20s after SENTINEL FAILOVER's
// switch).
func TestSentinelFaults(t *testing.T) {
	type variant struct {
		name     string
		replicas int
	}
	variants := []variant{{"plain", 0}}
	if long() {
		variants = append(variants, variant{"WithReplicas(2)", 2})
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			sn := redistest.StartSentinel(t)
			// Several names at once, each with its workers and resource:
			// more acquisitions per fault without a longer run.
			rigs := make([]*rig, pick(1, 4))
			workers := make([][]*proc, len(rigs))
			for i := range rigs {
				base := defaults(KindRLock, "sentinel-"+itoa(i), sn.Addrs()...)
				base.Sentinel = redistest.MasterSet
				base.Replicas, base.ReplicaTimeout = v.replicas, 300*time.Millisecond
				rigs[i] = newRig(t, base)
				workers[i] = rigs[i].spawnN("w", 3, nil)
			}
			for i, r := range rigs {
				r.ready(workers[i]...)
			}
			type fault struct {
				name       string
				at, agreed Mono
			}
			var faults []fault
			// The SENTINEL FAILOVER under way: over once the Sentinels
			// made the old primary a replica, at the next AwaitReady (or
			// never, if the run ends first).
			var failing *injected
			for round := range pick(1, 3) {
				for i, f := range sentinelFaults {
					if round > 0 || i > 0 {
						// After SENTINEL FAILOVER this waits for the
						// Sentinels to make the old primary a replica, 8
						// to 20s after the switch, and for its sync.
						sn.AwaitReady(60 * time.Second)
						if failing != nil {
							failing.heal()
							failing = nil
						}
					}
					// Every rig's: the test's schedule is shared.
					inj := rigs[0].fault(f.name, 1)
					old := f.fail(sn)
					at := Now()
					sn.AwaitPrimary(old, 30*time.Second)
					agreed := Now()
					faults = append(faults, fault{f.name, at, agreed})
					if f.rejoin {
						sn.Rejoin(old)
					}
					// Locks are taken again, on the new primary (with
					// WithReplicas(2), once two replicas follow it).
					for _, r := range rigs {
						r.await(30*time.Second, "entries after the failover", func(a Accepted) bool {
							return a.Phase == "enter" && a.Issued > agreed
						}, 0, 5)
					}
					if f.rejoin {
						inj.heal()
					} else {
						failing = &inj
					}
				}
			}
			for _, r := range rigs {
				r.checkWith(waitSlack, v.replicas == 0)
			}
			// The workers' view of each fault: the longest time, from the
			// fault until the next (or the end), in which no lock of the
			// first name was entered.
			log := rigs[0].log()
			for i, f := range faults {
				until := Mono(math.MaxInt64)
				if i+1 < len(faults) {
					until = faults[i+1].at
				}
				last, stall := f.at, time.Duration(0)
				for _, e := range log {
					if e.Phase == "enter" && e.Issued > f.at && e.Issued < until {
						stall = max(stall, e.Issued.Sub(last))
						last = e.Issued
					}
				}
				t.Logf("%s: every Sentinel announced the new primary %v after the fault; no lock was entered for %v",
					f.name, f.agreed.Sub(f.at).Round(time.Millisecond), stall.Round(time.Millisecond))
			}
		})
	}
}

// A Sentinel split brain: the primary runs in a network namespace with one
// worker process (the minority), the replicas, the Sentinels and the other
// workers outside it (the majority). The minority's worker takes the lock on
// the primary; then every packet between the two sides is dropped. The
// Sentinels promote a replica, and a worker of the majority takes the lock
// there, while the old primary, cut off but not dead, goes on taking the
// minority's renewals. The partition heals two leases after the majority's
// first entry; the Sentinels make the old primary a replica of the new one,
// and the minority's holder hears it has lost the lock. Both variants run at
// once, each with its own deployment and namespace.
//
// Without WithReplicas this is the documented limit of a lock on
// asynchronously replicated Redis: two holders at once, for the time this
// test measures (from the majority's entry to the minority's Lost); the
// checker counts their overlap apart, and asserts only what must still
// hold: the majority's token is the higher (the fence would refuse a late
// write of the minority), and the resource's history stays linearizable.
// With WithReplicas(1, ...), no renewal on the cut-off primary counts (no
// replica acknowledges it): the minority's lease is lost at its local
// deadline, before the promoted replica's copy of the lock runs out, and
// the checker allows no overlap at all. An Acquire of the majority may
// return up to the workers' dial timeout past its deadline, while its
// Client redials the old primary: the bug TestDeadlineWhileRedialing pins.
func TestSentinelSplitBrain(t *testing.T) {
	for _, v := range []struct {
		name     string
		replicas int
	}{{"plain", 0}, {"WithReplicas(1)", 1}} {
		t.Run(v.name, func(t *testing.T) {
			// Side by side: most of each is the Sentinels' timers.
			t.Parallel()
			ns := newNetns(t)
			sn := redistest.StartSentinelWith(t, redistest.Config{Netns: ns.name, Host: ns.Inside}, redistest.Config{Host: ns.Host})
			old := sn.Primary()
			base := defaults(KindRLock, "split-brain", sn.Addrs()...)
			base.Sentinel = redistest.MasterSet
			base.Replicas, base.ReplicaTimeout = v.replicas, 300*time.Millisecond
			r := newRig(t, base)
			minority := r.spawnIn(ns, "minority", func(c *WorkerConfig) { c.Goroutines, c.Hold = 1, 2*time.Minute })
			enter := r.await(60*time.Second, "enter by the minority", enterOf(minority.id), 0, 1)
			// The majority's workers, up and waiting for the lock before
			// the partition (their Open needs the primary).
			ws := r.spawnN("w", 2, func(c *WorkerConfig) { c.Wait = time.Second })
			eventually(t, 30*time.Second, "the majority's workers waiting", func() bool {
				waits := r.waitsOf()
				for _, w := range ws {
					if a, _ := timedOut(waits, w.id, 0, Now()); a == 0 {
						return false
					}
				}
				return true
			})
			from := r.writes()
			f := r.fault("Sentinel split brain (partition)", 1)
			ns.Partition()
			at := Now()
			sn.AwaitPrimary(old, 60*time.Second)
			promoted := Now()
			next := r.await(60*time.Second, "an entry by the majority", func(a Accepted) bool {
				return a.Phase == "enter" && process(a.Holder) != minority.id
			}, from, 1)
			// The split lasts two leases more: the old primary, cut off,
			// goes on taking what reaches it meanwhile.
			time.Sleep(2 * base.Watchdog)
			ns.Heal()
			healed := Now()
			f.heal()
			eventually(t, 60*time.Second, "the minority's section to end", func() bool { return r.ended(enter.Holder, enter.Token) })
			rep, secs := r.checkWith(redialSlack, v.replicas == 0)
			s := section(t, secs, enter.Holder, enter.Token)
			n := section(t, secs, next.Holder, next.Token)
			if s.Lost == 0 {
				t.Fatalf("the minority's lease (token %d) was not lost", s.Token)
			}
			two := s.Lost.Sub(n.Enter)
			t.Logf("partition at 0: the Sentinels agreed on a new primary at %v, the majority's %s entered at %v (token %d), healed at %v; the minority's %s (token %d) lost at %v (%s)",
				promoted.Sub(at).Round(time.Millisecond), n.Holder, n.Enter.Sub(at).Round(time.Millisecond), n.Token,
				healed.Sub(at).Round(time.Millisecond), s.Holder, s.Token, s.Lost.Sub(at).Round(time.Millisecond), s.LostErr)
			if n.Token <= s.Token {
				t.Errorf("the majority's token %d is not above the minority's %d", n.Token, s.Token)
			}
			if v.replicas > 0 {
				if two >= 0 {
					t.Errorf("with WithReplicas, two holders for %v", two)
				}
				return
			}
			t.Logf("two holders for %v, of which %v after the heal (%d overlapping sections, %d guarded by the fence)",
				max(two, 0).Round(time.Millisecond), s.Lost.Sub(healed).Round(time.Millisecond), rep.Overlaps, rep.Guarded)
			totals.splitBrain(max(two, 0))
		})
	}
}
