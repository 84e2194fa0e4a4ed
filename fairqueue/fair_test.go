package fairqueue_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
)

// Waiters from several Clients that queue one after another get the lock in
// exactly that order, round after round.
func TestStrictFIFO(t *testing.T) {
	srv := redistest.Start(t)
	const clients, waiters, rounds = 3, 12, 5
	cs := make([]*leasehold.Client, clients)
	for i := range cs {
		cs[i] = open(t, srv)
	}
	ctx := ctxTimeout(t, 30*time.Second)
	for r := 0; r < rounds; r++ {
		held := mustAcquire(t, fairqueue.New(cs[0], "fifo"), ctx)
		order := make(chan int, waiters)
		errs := make(chan error, waiters)
		var wg sync.WaitGroup
		for i := 0; i < waiters; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ls, err := fairqueue.New(cs[i%clients], "fifo").Acquire(ctx)
				if err != nil {
					errs <- err
					return
				}
				order <- i
				if err := ls.Release(context.Background()); err != nil {
					errs <- err
				}
			}()
			// The next waiter asks only once this one has its place.
			queued(t, srv, "fifo", i+1)
		}
		release(t, held)
		wg.Wait()
		close(order)
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		want := 0
		for got := range order {
			if got != want {
				t.Fatalf("round %d: waiter %d got the lock in turn %d", r, got, want)
			}
			want++
		}
		if want != waiters {
			t.Fatalf("round %d: %d of %d waiters got the lock", r, want, waiters)
		}
	}
}

// A release wakes the head of the queue only: one wake-up per release, not
// one per waiter (Redisson publishes to the head's own channel; a shared
// channel would wake every waiter to find that one may go). The handoffs are
// stepped one at a time so each release's wake-ups are counted alone.
func TestReleaseWakesOnlyHead(t *testing.T) {
	srv := redistest.Start(t)
	const n = 30
	cs := []*leasehold.Client{open(t, srv), open(t, srv), open(t, srv)}
	ctx := ctxTimeout(t, 30*time.Second)
	current := mustAcquire(t, fairqueue.New(cs[0], "herd"), ctx)
	type turn struct {
		i  int
		ls *lease.Lease
	}
	got := make(chan turn, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ls, err := fairqueue.New(cs[i%len(cs)], "herd").Acquire(ctx)
			if err != nil {
				t.Error(err)
				got <- turn{i, nil}
				return
			}
			got <- turn{i, ls}
		}()
		queued(t, srv, "herd", i+1)
	}
	var total, worst uint64
	for k := 0; k < n; k++ {
		before := wakeups(cs...)
		release(t, current)
		var tr turn
		select {
		case tr = <-got:
		case <-time.After(10 * time.Second):
			t.Fatalf("release %d: nobody got the lock", k)
		}
		if tr.ls == nil {
			t.FailNow()
		}
		if tr.i != k {
			t.Fatalf("release %d went to waiter %d", k, tr.i)
		}
		d := wakeups(cs...) - before
		total += d
		worst = max(worst, d)
		current = tr.ls
	}
	release(t, current)
	wg.Wait()
	t.Logf("%d releases to %d..1 waiters: %d wake-ups, %.2f per release, at most %d for one",
		n, n, total, float64(total)/n, worst)
	// One is expected; the margin covers a waiter's refresh that lands in
	// the moment the lock is free and tells the head again. Waking every
	// waiter would cost n(n+1)/2 = 465.
	if total > 2*n || worst > 3 {
		t.Fatalf("%d wake-ups for %d releases (at most %d for one): not O(1) per release", total, n, worst)
	}
}

// TryAcquire never takes a free lock while others wait for it, and never
// joins the queue.
func TestTryAcquireNeverJumpsQueue(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxTimeout(t, 30*time.Second)

	t.Run("free lock with a waiter", func(t *testing.T) {
		c, other := open(t, srv), open(t, srv)
		gone, err := leasehold.Open(srv.Option())
		if err != nil {
			t.Fatal(err)
		}
		// A waiter whose Client closes keeps its place until its queue
		// timeout (30s): the lock stays free with a waiter ahead.
		held := mustAcquire(t, fairqueue.New(c, "nojump"), ctx)
		waiting := goAcquire(fairqueue.New(gone, "nojump", leasehold.WithQueueTimeout(30*time.Second)), ctx)
		queued(t, srv, "nojump", 1)
		gone.Close()
		<-waiting
		release(t, held)
		for i := 0; i < 20; i++ {
			_, err := fairqueue.New(other, "nojump").TryAcquire(ctx)
			wantErr(t, err, lease.ErrNotAcquired)
		}
		if n, _ := srv.Do("EXISTS", "nojump").AsInt64(); n != 0 {
			t.Fatal("a TryAcquire took the lock")
		}
		if q := queue(t, srv, "nojump"); len(q) != 1 {
			t.Fatalf("queue after TryAcquire: %v, want the one waiter", q)
		}
	})

	t.Run("racing the handoff", func(t *testing.T) {
		c, w, h := open(t, srv), open(t, srv), open(t, srv)
		for r := 0; r < 10; r++ {
			held := mustAcquire(t, fairqueue.New(c, "race"), ctx)
			waiting := goAcquire(fairqueue.New(w, "race"), ctx)
			queued(t, srv, "race", 1)
			hctx, stop := context.WithCancel(ctx)
			var tokens []uint64
			done := make(chan struct{})
			go func() {
				defer close(done)
				l := fairqueue.New(h, "race")
				for hctx.Err() == nil {
					if ls, err := l.TryAcquire(hctx); err == nil {
						tokens = append(tokens, ls.Token())
						_ = ls.Release(context.Background())
					}
				}
			}()
			release(t, held)
			ls := await(t, waiting, 5*time.Second, "queued waiter")
			release(t, ls)
			stop()
			<-done
			for _, tok := range tokens {
				if tok < ls.Token() {
					t.Fatalf("round %d: TryAcquire took token %d before the waiter's %d", r, tok, ls.Token())
				}
			}
		}
	})
}

// A waiter whose ctx ends leaves the queue at once, not after its queue
// timeout, and the waiters behind it move up.
func TestWaiterLeavesQueueWhenCtxEnds(t *testing.T) {
	srv := redistest.Start(t)
	c, a, b := open(t, srv), open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 30*time.Second)
	// A 30s queue timeout: the entry goes within the 2s polled for below only
	// if the waiter removes it itself.
	qt := leasehold.WithQueueTimeout(30 * time.Second)

	t.Run("in the middle", func(t *testing.T) {
		held := mustAcquire(t, fairqueue.New(c, "leave"), ctx)
		first := goAcquire(fairqueue.New(a, "leave", qt), ctx)
		q := queued(t, srv, "leave", 1)
		bctx, cancel := context.WithCancel(ctx)
		quitter := goAcquire(fairqueue.New(b, "leave", qt), bctx)
		queued(t, srv, "leave", 2)
		last := goAcquire(fairqueue.New(a, "leave", qt), ctx)
		q = append(q, queued(t, srv, "leave", 3)[2])
		cancel()
		r := <-quitter
		wantErr(t, r.err, context.Canceled)
		eventually(t, 2*time.Second, "the cancelled waiter's entry removed", func() bool {
			got := queue(t, srv, "leave")
			return len(got) == 2 && got[0] == q[0] && got[1] == q[1]
		})
		if n, _ := srv.Do("ZCARD", "redisson_lock_timeout:{leave}").AsInt64(); n != 2 {
			t.Fatalf("%d deadlines for 2 waiters", n)
		}
		release(t, held)
		release(t, await(t, first, 5*time.Second, "first waiter"))
		release(t, await(t, last, 5*time.Second, "last waiter"))
	})

	// The head may be told the lock is free just as it gives up: the waiter
	// behind it must hear instead. With a 30s queue timeout (10s refresh)
	// only a message explains a handoff within 2s.
	t.Run("head gives up as the lock is freed", func(t *testing.T) {
		for r := 0; r < 5; r++ {
			held := mustAcquire(t, fairqueue.New(c, "giveup"), ctx)
			actx, cancel := context.WithCancel(ctx)
			head := goAcquire(fairqueue.New(a, "giveup", qt), actx)
			queued(t, srv, "giveup", 1)
			next := goAcquire(fairqueue.New(b, "giveup", qt), ctx)
			queued(t, srv, "giveup", 2)
			cancel()
			release(t, held)
			if r := <-head; r.err == nil {
				release(t, r.ls) // it won the race with its own ctx
			}
			release(t, await(t, next, 2*time.Second, fmt.Sprintf("round %d: waiter behind the head that gave up", r)))
		}
	})
}

// A waiter that vanishes without a word keeps its place only until its queue
// timeout: then the next waiter gets the lock.
func TestVanishedWaiterIsSkipped(t *testing.T) {
	const qt = 600 * time.Millisecond
	// Bound: the dead entry's deadline (qt after its last refresh), then the
	// live waiter's next refresh (qt/3), plus 2s for a loaded machine.
	const bound = qt + qt/3 + 2*time.Second
	srv := redistest.Start(t)
	c, live := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 30*time.Second)

	t.Run("client closed", func(t *testing.T) {
		gone, err := leasehold.Open(srv.Option())
		if err != nil {
			t.Fatal(err)
		}
		held := mustAcquire(t, fairqueue.New(c, "closed"), ctx)
		dead := goAcquire(fairqueue.New(gone, "closed", leasehold.WithQueueTimeout(qt)), ctx)
		q := queued(t, srv, "closed", 1)
		next := goAcquire(fairqueue.New(live, "closed", leasehold.WithQueueTimeout(qt)), ctx)
		queued(t, srv, "closed", 2)
		gone.Close()
		r := <-dead
		wantErr(t, r.err, lease.ErrClosed)
		if got := queue(t, srv, "closed"); got[0] != q[0] {
			t.Fatalf("queue %v: the closed Client's waiter left its place (%s) at once", got, q[0])
		}
		released := time.Now()
		release(t, held)
		release(t, await(t, next, bound, "waiter behind the closed Client's"))
		t.Logf("handoff past the dead waiter took %v (queue timeout %v)", time.Since(released), qt)
	})

	t.Run("process killed", func(t *testing.T) {
		held := mustAcquire(t, fairqueue.New(c, "killed"), ctx)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"="+srv.Addr(), helperEnv+"_QT="+qt.String(), helperEnv+"_LOCK=killed")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
		queued(t, srv, "killed", 1)
		next := goAcquire(fairqueue.New(live, "killed", leasehold.WithQueueTimeout(qt)), ctx)
		queued(t, srv, "killed", 2)
		if err := cmd.Process.Kill(); err != nil { // SIGKILL: no goodbye
			t.Fatal(err)
		}
		<-exited
		released := time.Now()
		release(t, held)
		release(t, await(t, next, bound, "waiter behind the killed process's"))
		t.Logf("handoff past the killed waiter took %v (queue timeout %v)", time.Since(released), qt)
	})
}
