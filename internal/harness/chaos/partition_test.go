package chaos

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/rlock"
)

// timedOut counts the Acquire and TryAcquire calls of process p (all
// processes if "") that started in [from, to] and ended at their ctx
// deadline.
func timedOut(waits []Wait, p string, from, to Mono) (acquires, tries int) {
	for _, w := range waits {
		if (p != "" && process(w.Holder) != p) || w.Start < from || w.Start > to || w.Acquired || !strings.Contains(w.Err, "deadline exceeded") {
			continue
		}
		if w.Try {
			tries++
		} else {
			acquires++
		}
	}
	return acquires, tries
}

// waitsOf reads the waits recorded so far.
func (r *rig) waitsOf() []Wait {
	var ws []Wait
	r.scan(func(rec Record) {
		if rec.Wait != nil {
			ws = append(ws, *rec.Wait)
		}
	})
	return ws
}

// A black-hole partition between a holder and Redis: the holder's process
// runs in a network namespace of its own, and every packet between it and
// Redis is dropped (no RST, no ICMP) while one of its goroutines holds the
// lock. The holder hears Lost() at its lease's local deadline, before the
// lock runs out in Redis and a waiter in another process takes it; the
// Acquire and TryAcquire calls its other goroutines make meanwhile end at
// their ctx deadlines; once the partition heals, its Client takes the lock
// again, with no more goroutines running than before the partition, and
// none left after Close.
func TestPartitionHolder(t *testing.T) {
	ns := newNetns(t)
	srv := redistest.StartWith(t, redistest.Config{Host: ns.Host})
	base := defaults(KindRLock, "partition-holder", srv.Addr())
	r := newRig(t, base)
	r.ready(r.spawnN("w", 2, nil)...)
	type cut struct {
		id         string
		holder     string
		token      uint64
		at, healed Mono
		next       Accepted
	}
	var cuts []cut
	for i := range pick(1, 4) {
		// One goroutine holds (for 3 leases) when the partition comes,
		// one waits in Acquire, one in TryAcquire, with 1s deadlines.
		v := r.spawnIn(ns, "cut"+itoa(i), func(c *WorkerConfig) {
			c.Goroutines, c.Try, c.Watchdog, c.Hold, c.Wait = 3, 1, victimLease, 3*victimLease, time.Second
		})
		enter := r.await(30*time.Second, "enter by "+v.id, enterOf(v.id), r.writes(), 1)
		from := r.writes()
		f := r.fault("black-hole partition of a holder", 1)
		ns.Partition()
		at := Now()
		next := r.await(30*time.Second, "a takeover by another process", func(a Accepted) bool {
			return a.Phase == "enter" && a.Token > enter.Token && process(a.Holder) != v.id
		}, from, 1)
		eventually(t, 10*time.Second, v.id+"'s Acquire and TryAcquire to time out in the partition", func() bool {
			a, try := timedOut(r.waitsOf(), v.id, at, Now())
			return a > 0 && try > 0
		})
		ns.Heal()
		healed := Now()
		f.heal()
		from = r.writes()
		back := r.await(30*time.Second, v.id+" back after the heal", enterOf(v.id), from, 1)
		t.Logf("partition %d: %s took the lock again %v after the heal", i, v.id, back.Issued.Sub(healed).Round(time.Millisecond))
		// Two entries once the heal has settled, for checkGoroutines.
		r.await(30*time.Second, v.id+" entering twice once the heal has settled", func(a Accepted) bool {
			return enterOf(v.id)(a) && a.Issued.Sub(healed) > healSettle
		}, from, 2)
		r.finish(v)
		cuts = append(cuts, cut{v.id, enter.Holder, enter.Token, at, healed, next})
	}
	_, secs := r.check(waitSlack)
	waits := r.waitsOf()
	for _, c := range cuts {
		s := section(t, secs, c.holder, c.token)
		n := section(t, secs, c.next.Holder, c.next.Token)
		if s.Lost == 0 {
			t.Errorf("%s token %d: lease not lost in the partition", c.holder, c.token)
			continue
		}
		t.Logf("%s token %d: lost %v into the partition (%s), %v before %s took the lock",
			c.holder, c.token, s.Lost.Sub(c.at).Round(time.Millisecond), s.LostErr, n.Enter.Sub(s.Lost).Round(100*time.Microsecond), n.Holder)
		if s.Lost >= n.Enter {
			t.Errorf("%s token %d: lost %v after %s took the lock", c.holder, c.token, s.Lost.Sub(n.Enter), n.Holder)
		}
		a, try := timedOut(waits, c.id, c.at, c.healed)
		t.Logf("%s: %d Acquire and %d TryAcquire ended at their deadline in the partition (%v)", c.id, a, try, c.healed.Sub(c.at).Round(time.Millisecond))
		checkGoroutines(t, secs, c.id, c.at, c.healed.Add(healSettle))
	}
}

// healSettle is how long after a heal an entry may still count goroutines
// that the partition left winding down (the first two entries after a heal
// in one CI run, the first 0.3s after it, counted 11 and 9 against 8 before,
// under -race on a 2-core machine; which goroutines they were, that run did
// not record); entries a hold later count what stays. 2s: the victim's next
// entry comes after its 4.5s hold anyway.
const healSettle = 2 * time.Second

// checkGoroutines fails the test unless process p, once the partition
// (from at) has healed and settled (at healed), ran no more goroutines at
// some entry than it did at an entry before: a partition leaves nothing
// running behind (goleak checks, after Close, that nothing at all is left).
func checkGoroutines(t *testing.T, secs []Section, p string, at, healed Mono) {
	t.Helper()
	var before, after []int
	for _, s := range secs {
		switch {
		case process(s.Holder) != p:
		case s.Enter < at:
			before = append(before, s.Goroutines)
		case s.Enter > healed:
			after = append(after, s.Goroutines)
		}
	}
	t.Logf("%s: goroutines at each entry before the partition %v, after the heal %v", p, before, after)
	if len(before) > 0 && len(after) > 0 && slices.Min(after) > slices.Max(before)+transientGoroutines {
		t.Errorf("%s: %d goroutines or more at every entry after the heal, at most %d before the partition", p, slices.Min(after), slices.Max(before))
	}
}

// transientGoroutines is how many more goroutines than before a partition
// an entry after it may count without one having been left behind: the
// count is one reading of the process' stacks, and a goroutine may be
// exiting at that instant (a reading found 9 goroutines where a stack dump
// of the same process a moment later listed the 8 it ran before the
// partition: 3 worker goroutines in Acquire, in TryAcquire's pause and in
// the section, the guard, the keeper, the subscription, stdin and main; the
// other workers' readings swing between 7 and 10 before a partition as
// after it). Two goroutines left behind by a partition, showing at every
// entry after it, fail the check; one is within this slack, and goleak
// checks, after Close, that nothing at all is left.
const transientGoroutines = 1

// A black-hole partition of Redis itself: the server runs in a network
// namespace, every worker outside it, and every packet to and from it is
// dropped for longer than the lease. Every holder hears Lost() at its
// lease's local deadline; every Acquire and TryAcquire meanwhile ends at its
// ctx deadline; once the partition heals, the Clients take the lock again,
// no section overlaps another, and none leaves a goroutine after Close.
func TestPartitionRedis(t *testing.T) {
	ns := newNetns(t)
	srv := redistest.StartWith(t, redistest.Config{Netns: ns.name, Host: ns.Inside})
	base := defaults(KindRLock, "partition-redis", srv.Addr())
	base.Wait, base.Try = time.Second, 1
	r := newRig(t, base)
	ws := r.spawnN("w", 2, nil)
	r.ready(ws...)
	type cut struct {
		holder     string
		token      uint64
		at, healed Mono
	}
	var cuts []cut
	for i := range pick(1, 4) {
		v := r.spawn("held"+itoa(i), func(c *WorkerConfig) {
			c.Goroutines, c.Try, c.Watchdog, c.Hold = 1, 0, victimLease, 3*victimLease
		})
		enter := r.await(30*time.Second, "enter by "+v.id, enterOf(v.id), r.writes(), 1)
		f := r.fault("black-hole partition of Redis", 1)
		ns.Partition()
		at := Now()
		// Past the holder's lease, and until the others' calls have met
		// their deadlines in the partition.
		eventually(t, 10*time.Second, "Acquire and TryAcquire to time out in the partition", func() bool {
			a, try := timedOut(r.waitsOf(), "", at, Now())
			return a > 0 && try > 0 && Now().Sub(at) > victimLease
		})
		ns.Heal()
		healed := Now()
		f.heal()
		back := r.await(30*time.Second, "an entry after the heal", func(a Accepted) bool { return a.Phase == "enter" }, r.writes(), 1)
		t.Logf("partition %d: the lock was taken again %v after the heal", i, back.Issued.Sub(healed).Round(time.Millisecond))
		r.progress(r.writes(), 10, 30*time.Second, "after the heal")
		r.finish(v)
		cuts = append(cuts, cut{enter.Holder, enter.Token, at, healed})
	}
	_, secs := r.check(waitSlack)
	waits := r.waitsOf()
	for _, c := range cuts {
		s := section(t, secs, c.holder, c.token)
		if s.Lost == 0 {
			t.Errorf("%s token %d: lease not lost in a partition of %v (lease %v)", c.holder, c.token, c.healed.Sub(c.at), victimLease)
			continue
		}
		t.Logf("%s token %d: lost %v into the partition (%s)", c.holder, c.token, s.Lost.Sub(c.at).Round(time.Millisecond), s.LostErr)
		a, try := timedOut(waits, "", c.at, c.healed)
		t.Logf("%d Acquire and %d TryAcquire ended at their deadline in the partition (%v)", a, try, c.healed.Sub(c.at).Round(time.Millisecond))
		for _, w := range ws {
			checkGoroutines(t, secs, w.id, c.at, c.healed)
		}
	}
}

// redialSlack is waitSlack and the workers' dial timeout: how late an
// Acquire may return in a partition that outlasts its Client's connection,
// until the bug TestDeadlineWhileRedialing pins is fixed.
const redialSlack = waitSlack + time.Second

// pinnedEnv, set to 1, runs the tests that pin a known bug (skipped until it
// is fixed).
const pinnedEnv = "LEASEHOLD_CHAOS_PINNED"

// Pins a bug: Acquire and TryAcquire overrun their ctx deadline by up to
// rueidis' dial timeout (its Dialer.Timeout, 5s by default; 1s here) during
// a black-hole partition that outlasts the Client's connection. Once rueidis
// has found the connection dead, the next command dials a new one, with its
// own ctx; every other command, an attempt whose ctx ends in 500ms among
// them, waits for that dial in rueidis' mux (v1.0.79 mux._pipe,
// singleconnect: sync.WaitGroup.Wait, whatever its own ctx), so it returns
// when the dial times out. Seen with a waiter's subscription dialing and
// attempts waiting (go test -run TestDeadlineWhileRedialing: up to 500ms
// past 500ms deadlines with a 1s dial timeout; about 1s past 1s deadlines in
// TestSentinelSplitBrain). The short partitions of TestPartitionHolder and
// TestPartitionRedis end before rueidis gives up the connection.
func TestDeadlineWhileRedialing(t *testing.T) {
	if os.Getenv(pinnedEnv) != "1" {
		t.Skipf("pins a known bug (Acquire past its ctx deadline while rueidis redials in a partition); %s=1 runs it", pinnedEnv)
	}
	ns := newNetns(t)
	srv := redistest.StartWith(t, redistest.Config{Netns: ns.name, Host: ns.Inside})
	const wait = 500 * time.Millisecond
	holder := open(t, srv.Option(), leasehold.WithWatchdog(900*time.Millisecond))
	c := open(t, srv.Option(), leasehold.WithWatchdog(900*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := rlock.New(holder, "redialing").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ns.Partition()
	start := time.Now()
	var mu sync.Mutex
	var worst time.Duration
	var wg sync.WaitGroup
	// 8s: past rueidis' ConnWriteTimeout (2s) and a few dials of 1s.
	for g := range 4 {
		wg.Go(func() {
			for time.Since(start) < 8*time.Second {
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				deadline, _ := ctx.Deadline()
				if g%2 == 0 {
					_, _ = rlock.New(c, "redialing").Acquire(ctx)
				} else {
					_, _ = rlock.New(c, "redialing").TryAcquire(ctx)
				}
				cancel()
				mu.Lock()
				worst = max(worst, time.Since(deadline))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	ns.Heal()
	<-l.Lost()
	_ = l.Release(ctx)
	t.Logf("latest return past a %v deadline in an 8s partition: %v", wait, worst)
	if worst > waitSlack {
		t.Errorf("Acquire or TryAcquire returned %v past its ctx deadline", worst)
	}
}
