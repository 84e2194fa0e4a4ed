package chaos

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/script"
)

// A semaphore keeps its bound under faults: worker processes contend for a
// semaphore of 3 permits (9 goroutines and the victims), and while holders
// are killed with kill -9, paused with SIGSTOP past their lease, and the
// server is killed and restarted empty, never more than 3 sections hold an
// unexpired permit at once (CheckBound, on the records' CLOCK_MONOTONIC
// times), a killed holder's permit comes back within its lease, and every
// Acquire returns by its deadline.
//
// How fenced a semaphore can be: not by token. Its permits all have token
// 0, since several holders hold at once by design, and the resource's fence
// refuses nothing. What holds the bound is that Redis admits no more than 3
// unexpired permits and that a running holder stops acting before its
// permit can expire there (its lease's local deadline, less the drift
// margin). A holder paused past its lease cannot stop: its write after
// SIGCONT is taken (a Late write, counted and expected after each pause). A
// server restarted empty loses the permits with it: the old holders act on
// until their next renewal tells them (Carried, the documented loss of a
// single Redis without persistence, as for the locks).
func TestSemaphoreBound(t *testing.T) {
	const permits = 3
	srv := redistest.Start(t)
	base := defaults(KindSemaphore, "semaphore", srv.Addr())
	set := func() { srv.Do("SET", base.Name, strconv.Itoa(permits), "NX") } // as TrySetPermits, at each service's start
	set()
	r := newRig(t, base)
	r.ready(r.spawnN("w", 3, nil)...)
	killed := map[string]Mono{}
	var restarts []Mono
	var paused []string

	// back waits until every permit is held, none since before at: a
	// holder that stopped renewing at at has had its permit taken back.
	back := func(at int64, what string) time.Duration {
		t.Helper()
		start := time.Now()
		eventually(t, base.Watchdog+5*time.Second, what, func() bool {
			held, err := srv.Do("ZRANGE", script.KeysOf(base.Name).SemaphoreTimeout, "0", "-1", "WITHSCORES").AsZScores()
			if err != nil || len(held) != permits {
				return false
			}
			return int64(held[0].Score) > at+base.Watchdog.Milliseconds()
		})
		return time.Since(start)
	}

	for i := range pick(1, 4) {
		v := r.spawn("victim"+itoa(i), func(c *WorkerConfig) { c.Goroutines, c.Hold = 1, 2*base.Watchdog })
		enter := r.await(30*time.Second, "enter by "+v.id, enterOf(v.id), r.writes(), 1)
		at := serverMs(t, srv)
		f := r.fault("kill -9 holder process (semaphore)", 1)
		r.kill(v)
		killed[v.id] = Now()
		f.heal()
		took := back(at, "the killed holder's permit back")
		t.Logf("kill %d: %s (%s) killed in its section; its permit was back in use %v later (lease %v)", i, v.id, enter.Holder, took, base.Watchdog)
	}
	for i := range pick(1, 3) {
		v := r.spawn("paused"+itoa(i), func(c *WorkerConfig) { c.Goroutines, c.Hold, c.LateWrite = 1, 3*base.Watchdog, true })
		r.await(30*time.Second, "enter by "+v.id, enterOf(v.id), r.writes(), 1)
		at := serverMs(t, srv)
		f := r.fault("SIGSTOP holder > lease (semaphore)", 1)
		r.signal(v, syscall.SIGSTOP)
		took := back(at, "the paused holder's permit taken by another")
		r.signal(v, syscall.SIGCONT)
		f.heal()
		paused = append(paused, v.id)
		t.Logf("pause %d: %s stopped in its section; its permit went to another %v later", i, v.id, took)
	}
	for i := range pick(1, 2) {
		r.await(30*time.Second, "an enter", func(a Accepted) bool { return a.Phase == "enter" }, r.writes(), 1)
		f := r.fault("kill -9 + restart redis (semaphore)", 1)
		srv.Kill()
		srv.Restart()
		// The generation boundary is when the new server is up, before any
		// permit exists on it (set): a section that entered after the kill
		// but before now took its permit from the old server, in the moment
		// between the await above and the kill. Taken before the kill, the
		// boundary counted such a section with the new server's holders,
		// one too many.
		restarts = append(restarts, Now())
		set()
		f.heal()
		r.progress(r.writes(), 20, 30*time.Second, "after the restart")
		t.Logf("restart %d: progress on the restarted server", i)
	}

	r.stop()
	secs, waits, sums := r.records()
	log := r.log()
	rep := Check(Input{Sections: secs, Waits: waits, Log: log, Killed: r.killed, WaitSlack: waitSlack})
	// Overlaps, one token (0) from many holders and writes the fence did
	// not refuse are a semaphore's nature; the bound is its property.
	rep.Overlaps, rep.Guarded, rep.Unguarded, rep.Order, rep.AfterLoss = 0, 0, nil, nil, nil
	b := CheckBound(BoundInput{Permits: permits, Lease: base.Watchdog, Sections: secs, Log: log, Killed: killed, Restarts: restarts})
	t.Logf("checked: %v", rep)
	t.Logf("bound: %v", b)
	r.live(waits, log)
	for _, v := range append(rep.Violations(), b.Over...) {
		t.Errorf("violation: %s", v)
	}
	if b.Most != permits {
		t.Errorf("at most %d permits held at once: the workers never filled the %d", b.Most, permits)
	}
	// Late writes come from the paused holders, which write without looking
	// (LateWrite), and each pause makes one: the write it had in flight.
	// (One of them may write late again, if a later section of its spans
	// the restart.) A holder that ran and looked knew of its loss in time.
	lateBy := map[string]int{}
	for _, l := range b.Late {
		t.Logf("late: %s", l)
		p := process(l[:strings.IndexByte(l, ':')])
		if !slices.Contains(paused, p) {
			t.Errorf("late write from a holder that was not paused: %s", l)
		}
		lateBy[p]++
	}
	for _, p := range paused {
		if lateBy[p] == 0 {
			t.Errorf("%s wrote nothing late after its pause: the pause did not outlast its lease", p)
		}
	}
	// The old holders learn at their next renewal, a third of the lease
	// after the last; a lease's worth of slack for a loaded machine.
	if b.CarriedFor > base.Watchdog/3+base.Watchdog {
		t.Errorf("a holder acted %v after the restart that lost its permit", b.CarriedFor)
	}
	if rep.Acquisitions == 0 {
		t.Error("no acquisition was made")
	}
	totals.add(rep)
	r.summaries(sums)
}

// serverMs is the server's clock (TIME) in ms.
func serverMs(t *testing.T, srv *redistest.Server) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rc := srv.Client()
	now, err := rc.Do(ctx, rc.B().Time().Build()).AsStrSlice()
	if err != nil || len(now) != 2 {
		t.Fatalf("TIME: %v", err)
	}
	sec, _ := strconv.ParseInt(now[0], 10, 64)
	usec, _ := strconv.ParseInt(now[1], 10, 64)
	return sec*1000 + usec/1000
}

// The bound end to end with worker processes that take no permit at all (6
// goroutines, token 1 for all): CheckBound finds more holders than the 2
// permits of a semaphore they did not use. Without this, a bound checker
// wired wrong (records lost, intervals cut short) would pass every test.
func TestCheckBoundCatchesNoSemaphore(t *testing.T) {
	srv := startServer(t)
	base := defaults(KindNoneUnfenced, "nosemaphore", srv.Addr())
	base.Hold = 10 * time.Millisecond
	r := newRig(t, base)
	r.spawnN("w", 2, nil)
	r.progress(0, 50, 30*time.Second, "without a semaphore")
	r.stop()
	secs, _, _ := r.records()
	b := CheckBound(BoundInput{Permits: 2, Lease: base.Watchdog, Sections: secs, Log: r.log()})
	t.Logf("without a semaphore: %v", b)
	if len(b.Over) == 0 || b.Most <= 2 {
		t.Fatal("no breach of the bound found without a semaphore")
	}
}
