package leaseholdgocron_test

import (
	"context"
	"errors"
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
)

// leaders is the indexes of the Electors whose IsLeader returns nil.
func leaders(es []*leaseholdgocron.Elector) []int {
	var out []int
	for i, e := range es {
		if e.IsLeader(context.Background()) == nil {
			out = append(out, i)
		}
	}
	return out
}

// oneLeader waits until exactly one of the open Electors of es leads, checks
// that no two ever do meanwhile, and returns it.
func oneLeader(t *testing.T, es []*leaseholdgocron.Elector) int {
	t.Helper()
	var got []int
	locktest.Eventually(t, 5*time.Second, "one leader", func() bool {
		got = leaders(es)
		if len(got) > 1 {
			t.Fatalf("Electors %v lead at once", got)
		}
		return len(got) == 1
	})
	return got[0]
}

// Three Electors on three Clients: one leads; once it closes (resigns),
// another takes over, woken by the resignation (well within the 30s lease a
// dead leader would hold), and one leads again. A closed Elector reports
// lease.ErrClosed, and its Close returns once its goroutine has ended
// (goleak checks the rest at the end).
func TestElector(t *testing.T) {
	srv := redistest.Start(t)
	var es []*leaseholdgocron.Elector
	for range 3 {
		es = append(es, leaseholdgocron.NewElector(locktest.Open(t, srv), "scheduler"))
	}
	defer func() {
		for _, e := range es {
			e.Close()
		}
	}()
	first := oneLeader(t, es)
	// Leadership lasts: still one, the same, a little later.
	time.Sleep(100 * time.Millisecond)
	if got := leaders(es); len(got) != 1 || got[0] != first {
		t.Fatalf("leaders %v, want still %d", got, first)
	}

	closed := time.Now()
	if err := es[first].Close(); err != nil {
		t.Fatalf("Close of the leader: %v", err)
	}
	if err := es[first].IsLeader(context.Background()); !errors.Is(err, lease.ErrNotAcquired) || !errors.Is(err, lease.ErrClosed) {
		t.Fatalf("IsLeader after Close: %v, want ErrNotAcquired and ErrClosed", err)
	}
	rest := append(append([]*leaseholdgocron.Elector(nil), es[:first]...), es[first+1:]...)
	next := oneLeader(t, rest)
	t.Logf("Elector %d led; after its Close, another took over in %v", first, time.Since(closed))
	if err := rest[next].Close(); err != nil {
		t.Fatal(err)
	}
	oneLeader(t, rest[1-next:2-next])
	if err := es[first].Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

// An Elector given an option elections do not take never leads, and says
// why.
func TestElectorInvalid(t *testing.T) {
	srv := redistest.Start(t)
	e := leaseholdgocron.NewElector(locktest.Open(t, srv), "bad", leasehold.WithHoldAtLeast(time.Second))
	defer e.Close()
	locktest.Eventually(t, 5*time.Second, "the campaign's error", func() bool {
		return errors.Is(e.IsLeader(context.Background()), lease.ErrInvalid)
	})
	if err := e.IsLeader(context.Background()); !errors.Is(err, lease.ErrNotAcquired) {
		t.Fatalf("IsLeader: %v, want ErrNotAcquired too", err)
	}
	nilClient := leaseholdgocron.NewElector(nil, "none")
	if err := nilClient.Close(); err != nil {
		t.Fatal(err)
	}
}

// With gocron's WithDistributedElector, three schedulers run a job only on
// the one whose Elector leads, and on another once that one closes.
func TestElectorSchedulers(t *testing.T) {
	srv := redistest.Start(t)
	var (
		mu  sync.Mutex
		ran []int // the scheduler of each run, in order
	)
	var es []*leaseholdgocron.Elector
	var ss []gocron.Scheduler
	for i := range 3 {
		e := leaseholdgocron.NewElector(locktest.Open(t, srv), "cron")
		es = append(es, e)
		s, err := gocron.NewScheduler(gocron.WithDistributedElector(e))
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.NewJob(gocron.DurationJob(100*time.Millisecond), gocron.NewTask(func() {
			mu.Lock()
			ran = append(ran, i)
			mu.Unlock()
		}))
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, s)
	}
	defer func() {
		for i := range ss {
			ss[i].Shutdown()
			es[i].Close()
		}
	}()
	first := oneLeader(t, es)
	runs := func() []int { mu.Lock(); defer mu.Unlock(); return append([]int(nil), ran...) }
	mark := len(runs())
	for _, s := range ss {
		s.Start()
	}
	locktest.Eventually(t, 5*time.Second, "three runs", func() bool { return len(runs()) >= mark+3 })
	if err := es[first].Close(); err != nil {
		t.Fatal(err)
	}
	mark = len(runs())
	var next int
	locktest.Eventually(t, 5*time.Second, "three runs under the next leader", func() bool {
		r := runs()[mark:]
		if len(r) == 0 {
			return false
		}
		next = r[len(r)-1]
		return next != first && len(r) >= 4
	})
	// Each run was on the leader of its time: first, then next.
	r := runs()
	k := slices.Index(r, next)
	for i, s := range r {
		if (i < k && s != first) || (i >= k && s != next) {
			t.Fatalf("run %d on scheduler %d; the leaders were %d, then %d: %v", i, s, first, next, r)
		}
	}
}
