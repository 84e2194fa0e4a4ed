package leaseholdgocron_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/leasehold/leasehold"
	leaseholdgocron "github.com/leasehold/leasehold/gocron"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

// ran is one run of a job: which replica ran it, for which of its ticks,
// from when to when.
type ran struct {
	replica, tick int
	start, end    time.Time
}

// runTicks runs a job every interval on replicas gocron schedulers, each on a
// Client of its own on srv and each with NewLocker(c, opts...), replica i's
// schedule offset by i*step (as clocks skewed by that much would offset it),
// for ticks ticks, each run lasting work. It returns the runs.
func runTicks(t *testing.T, srv *redistest.Server, name string, replicas, ticks int, interval, step, work time.Duration,
	opts ...leasehold.LockOption) []ran {
	t.Helper()
	var (
		mu   sync.Mutex
		runs []ran
	)
	base := time.Now().Add(500 * time.Millisecond)
	var schedulers []gocron.Scheduler
	for i := range replicas {
		c := locktest.Open(t, srv)
		s, err := gocron.NewScheduler(gocron.WithDistributedLocker(leaseholdgocron.NewLocker(c, opts...)))
		if err != nil {
			t.Fatal(err)
		}
		first := base.Add(time.Duration(i) * step)
		_, err = s.NewJob(gocron.DurationJob(interval), gocron.NewTask(func() {
			r := ran{replica: i, start: time.Now()}
			time.Sleep(work)
			r.end = time.Now()
			// The tick of this replica's schedule the run is for.
			r.tick = int((r.start.Sub(first) + interval/2) / interval)
			mu.Lock()
			runs = append(runs, r)
			mu.Unlock()
		}), gocron.WithName(name), gocron.WithStartAt(gocron.WithStartDateTime(first)))
		if err != nil {
			t.Fatal(err)
		}
		schedulers = append(schedulers, s)
	}
	for _, s := range schedulers {
		s.Start()
	}
	// Halfway between the last replica's last tick and the first's next.
	time.Sleep(time.Until(base.Add(time.Duration(ticks-1)*interval + time.Duration(replicas-1)*step + interval/2)))
	for _, s := range schedulers {
		if err := s.Shutdown(); err != nil {
			t.Error(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return runs
}

// perTick counts the runs of each tick below ticks.
func perTick(runs []ran, ticks int) []int {
	n := make([]int, ticks)
	for _, r := range runs {
		if r.tick >= 0 && r.tick < ticks {
			n[r.tick]++
		}
	}
	return n
}

// Three schedulers on one Redis, their schedules 0, 100ms and 200ms apart (as
// clocks that far apart would place them), run a job of 5ms every second.
// With WithHoldAtLeast(600ms), each tick runs exactly once and no two runs
// overlap. Without it, the run is over before the replicas behind have tried,
// and they run the tick again: the failure the option exists for (the second
// case shows the first can fail). The margins are 400ms either way (a
// replica's timer 400ms late; the keep over 400ms before the next tick), for
// a loaded machine.
func TestLockerOneRunPerTick(t *testing.T) {
	srv := redistest.Start(t)
	const (
		replicas = 3
		interval = time.Second
		step     = 100 * time.Millisecond
		work     = 5 * time.Millisecond
	)

	t.Run("with WithHoldAtLeast", func(t *testing.T) {
		const ticks = 5
		runs := runTicks(t, srv, "report", replicas, ticks, interval, step, work, leasehold.WithHoldAtLeast(600*time.Millisecond))
		n := perTick(runs, ticks)
		t.Logf("runs per tick: %v", n)
		for tick, k := range n {
			if k != 1 {
				t.Errorf("tick %d ran %d times, want once: %v", tick, k, runs)
			}
		}
		slices.SortFunc(runs, func(a, b ran) int { return a.start.Compare(b.start) })
		for i := 1; i < len(runs); i++ {
			if runs[i].start.Before(runs[i-1].end) {
				t.Errorf("runs overlap: %+v and %+v", runs[i-1], runs[i])
			}
		}
	})

	t.Run("without", func(t *testing.T) {
		const ticks = 3
		n := perTick(runTicks(t, srv, "report-plain", replicas, ticks, interval, step, work), ticks)
		t.Logf("runs per tick: %v", n)
		if slices.Max(n) < 2 {
			t.Errorf("runs per tick %v: without WithHoldAtLeast, a 5ms run was expected to run again on a replica 100ms behind", n)
		}
	})
}

// Lock makes one attempt: a job whose lock is taken is skipped with an error
// wrapping lease.ErrNotAcquired, on another Client as on the same one.
func TestLockBusy(t *testing.T) {
	srv := redistest.Start(t)
	c, other := locktest.Open(t, srv), locktest.Open(t, srv)
	ctx := locktest.Ctx(t, 10*time.Second)
	l := leaseholdgocron.NewLocker(c)
	held, err := l.Lock(ctx, "busy")
	if err != nil {
		t.Fatal(err)
	}
	for _, lk := range []gocron.Locker{l, leaseholdgocron.NewLocker(other)} {
		if _, err := lk.Lock(ctx, "busy"); !errors.Is(err, lease.ErrNotAcquired) {
			t.Errorf("Lock of a held job: %v, want ErrNotAcquired", err)
		}
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := leaseholdgocron.NewLocker(other).Lock(ctx, "busy")
	if err != nil {
		t.Fatalf("Lock after Unlock: %v", err)
	}
	if err := again.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// An option of another kind is refused at the first Lock, as rlock's.
	if _, err := leaseholdgocron.NewLocker(c, leasehold.WithQueueTimeout(time.Second)).Lock(ctx, "bad"); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("Lock with WithQueueTimeout: %v, want ErrInvalid", err)
	}
}

// A task that takes gocron's context gets, from RunContext, one that ends
// when the run's lock is lost (an operator's force release here), with
// lease.ErrLost as its cause; outside a run, RunContext returns its ctx.
func TestRunContext(t *testing.T) {
	srv := redistest.Start(t)
	c, other := locktest.Open(t, srv), locktest.Open(t, srv)
	ctx := locktest.Ctx(t, 20*time.Second)
	if bg := context.Background(); leaseholdgocron.RunContext(bg) != bg {
		t.Error("RunContext outside a run is not its ctx")
	}
	started := make(chan bool, 1)
	ended := make(chan error, 1)
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(leaseholdgocron.NewLocker(c)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.NewJob(gocron.OneTimeJob(gocron.OneTimeJobStartImmediately()), gocron.NewTask(func(ctx context.Context) {
		run := leaseholdgocron.RunContext(ctx)
		started <- run != ctx
		select {
		case <-run.Done():
			ended <- context.Cause(run)
		case <-time.After(10 * time.Second):
			ended <- errors.New("the run's context did not end")
		}
	}), gocron.WithName("sync"))
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	defer s.Shutdown()
	select {
	case own := <-started:
		if !own {
			t.Fatal("RunContext in a locked run returned gocron's context")
		}
	case <-ctx.Done():
		t.Fatal("the job did not run")
	}
	if ok, err := rlock.New(other, "sync").ForceRelease(ctx); !ok || err != nil {
		t.Fatalf("ForceRelease: %v, %v", ok, err)
	}
	select {
	case cause := <-ended:
		if !errors.Is(cause, lease.ErrLost) {
			t.Fatalf("the run's context ended with %v, want a cause wrapping lease.ErrLost", cause)
		}
	case <-ctx.Done():
		t.Fatal(fmt.Errorf("no end of the run: %w", ctx.Err()))
	}
}
