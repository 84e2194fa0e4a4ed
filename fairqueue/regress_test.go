package fairqueue_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
)

// deadlineSpread is the latest queue deadline of the lock name less the
// server's time now, in ms, read atomically from Redis; ok is false when
// nobody waits.
const deadlineSpread = `local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local last = redis.call('zrange', KEYS[1], -1, -1, 'WITHSCORES')
if #last == 0 then return {0, 0} end
return {1, tonumber(last[2]) - now}`

func spread(t *testing.T, srv *redistest.Server, name string) (ms int64, ok bool) {
	t.Helper()
	v, err := srv.Do("EVAL", deadlineSpread, "1", "redisson_lock_timeout:{"+name+"}").AsIntSlice()
	if err != nil {
		t.Fatalf("deadline spread: %v", err)
	}
	return v[1], v[0] == 1
}

// Pins Redisson issues 1104 and 2099: queue deadlines drifting hours into
// the future as waiters time out and die, until a dead waiter's far deadline
// blocks everyone. Here, through a churn of waiters timing out, winning and
// dying, no deadline is ever more than one queue timeout ahead of the
// server's clock; and dead waiters at the head cost one queue timeout
// together, not one each.
func TestQueueDeadlinesNeverDrift(t *testing.T) {
	const qt = time.Second
	srv := redistest.Start(t)
	ctx := ctxTimeout(t, 60*time.Second)
	opt := leasehold.WithQueueTimeout(qt)

	t.Run("churn", func(t *testing.T) {
		cs := []*leasehold.Client{open(t, srv), open(t, srv)}
		doomed, err := leasehold.Open(srv.Option())
		if err != nil {
			t.Fatal(err)
		}
		// Closed halfway below; also here, for a run that ends first.
		t.Cleanup(func() { doomed.Close() })
		cs = append(cs, doomed)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for i := 0; i < 12; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l := fairqueue.New(cs[i%len(cs)], "drift", opt, leasehold.WithLeaseTime(5*time.Second))
				for {
					select {
					case <-stop:
						return
					default:
					}
					// Short waits, as Redisson's tryLock(500ms, 30s) in 1104:
					// most attempts time out while in the queue.
					actx, cancel := context.WithTimeout(ctx, time.Duration(20+rand.IntN(130))*time.Millisecond)
					ls, err := l.Acquire(actx)
					cancel()
					if errors.Is(err, lease.ErrClosed) {
						return // died with its Client
					}
					if err == nil {
						time.Sleep(30 * time.Millisecond)
						_ = ls.Release(context.Background())
					}
				}
			}()
		}
		var worst int64
		samples := 0
		end := time.Now().Add(2 * time.Second)
		halfway := end.Add(-time.Second)
		for time.Now().Before(end) {
			// Halfway in samples or in time, whichever comes first: a busy
			// machine takes fewer than 50 samples in 2s, and a Client
			// that was never closed failed the package's leak check.
			if samples == 50 || time.Now().After(halfway) {
				doomed.Close() // a third of the waiters die where they stand
			}
			if ms, ok := spread(t, srv, "drift"); ok {
				worst = max(worst, ms)
				samples++
			}
			time.Sleep(10 * time.Millisecond)
		}
		close(stop)
		wg.Wait()
		t.Logf("latest deadline at most %dms ahead over %d samples (queue timeout %v)", worst, samples, qt)
		// Deadlines are the server's time plus qt, compared with the same
		// clock: no slack is needed.
		if worst > qt.Milliseconds() {
			t.Fatalf("a deadline %dms ahead, queue timeout %v: deadlines drift", worst, qt)
		}
		if samples < 20 {
			t.Fatalf("only %d samples saw a queue: no churn", samples)
		}
	})

	t.Run("dead waiters skipped together", func(t *testing.T) {
		const dead = 8
		c, live := open(t, srv), open(t, srv)
		held := mustAcquire(t, fairqueue.New(c, "graveyard"), ctx)
		var gone []*leasehold.Client
		var waiting []<-chan result
		for i := 0; i < dead; i++ {
			g, err := leasehold.Open(srv.Option())
			if err != nil {
				t.Fatal(err)
			}
			gone = append(gone, g)
			waiting = append(waiting, goAcquire(fairqueue.New(g, "graveyard", opt), ctx))
			queued(t, srv, "graveyard", i+1)
		}
		next := goAcquire(fairqueue.New(live, "graveyard", opt), ctx)
		queued(t, srv, "graveyard", dead+1)
		for i, g := range gone {
			g.Close()
			<-waiting[i]
		}
		released := time.Now()
		release(t, held)
		// Redisson's chained deadlines would hold the live waiter for about
		// dead × qt = 8s; here it is qt plus a refresh (qt/3), and 1.5s for a
		// loaded machine.
		ls := await(t, next, qt+qt/3+1500*time.Millisecond, "live waiter behind 8 dead ones")
		t.Logf("%d dead waiters skipped in %v (queue timeout %v)", dead, time.Since(released), qt)
		release(t, ls)
	})
}

// Pins Redisson issue 3004: live waiters removed from the queue as stale
// when the holder keeps the lock longer than the thread-wait time, then
// hanging for ever since the release tells someone else. Here waiters keep
// their place however long the lock is held, and a waiter whose place is
// taken away all the same joins again and gets the lock.
func TestLiveWaiterNeverRemoved(t *testing.T) {
	const qt = time.Second
	srv := redistest.Start(t)
	c, w := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 30*time.Second)
	held := mustAcquire(t, fairqueue.New(c, "patient"), ctx)
	var waiting []<-chan result
	for i := 0; i < 3; i++ {
		waiting = append(waiting, goAcquire(fairqueue.New(w, "patient", leasehold.WithQueueTimeout(qt)), ctx))
		queued(t, srv, "patient", i+1)
	}
	want := queue(t, srv, "patient")
	// Held for three queue timeouts: a waiter that did not refresh its place
	// would be removed twice over.
	end := time.Now().Add(3 * qt)
	for time.Now().Before(end) {
		if got := queue(t, srv, "patient"); len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Fatalf("queue %v while the lock is held, want %v", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Take the head's place away, as a foreign client with a skewed clock
	// could: it joins again at the tail within a refresh (qt/3, plus 2s for a
	// loaded machine).
	srv.Do("LREM", "redisson_lock_queue:{patient}", "0", want[0])
	srv.Do("ZREM", "redisson_lock_timeout:{patient}", want[0])
	eventually(t, qt/3+2*time.Second, "the removed waiter back at the tail", func() bool {
		got := queue(t, srv, "patient")
		return len(got) == 3 && got[2] == want[0]
	})
	release(t, held)
	for i, k := range []int{1, 2, 0} {
		ls := await(t, waiting[k], 5*time.Second, "waiter")
		if ls.Token() == 0 {
			t.Fatalf("turn %d: no token", i)
		}
		release(t, ls)
	}
}

// Pins Redisson issues 3730, 4167 and 4478: a queue stuck with nobody
// holding the lock, the waiters sleeping on a message that never comes after
// the holder's lease ran out. Here the head sleeps no longer than the
// holder's lease, and whoever becomes head under a short lease is told.
func TestQueueNeverStuck(t *testing.T) {
	// A 9s queue timeout makes a waiter's refresh 3s: every bound below is
	// under it, so the handoffs are the head's lease timer at work.
	qt := leasehold.WithQueueTimeout(9 * time.Second)
	srv := redistest.Start(t)
	cs := []*leasehold.Client{open(t, srv), open(t, srv)}
	ctx := ctxTimeout(t, 30*time.Second)

	t.Run("holder died holding", func(t *testing.T) {
		// A holder that died holding: its lock is left to run out.
		srv.Do("HSET", "orphan", "dead-holder:1", "1")
		srv.Do("PEXPIRE", "orphan", "500")
		start := time.Now()
		var waiting []<-chan result
		for i := 0; i < 3; i++ {
			waiting = append(waiting, goAcquire(fairqueue.New(cs[i%2], "orphan", qt), ctx))
			queued(t, srv, "orphan", i+1)
		}
		// 500ms lease, plus 1.5s for a loaded machine: under the 3s refresh.
		ls := await(t, waiting[0], 500*time.Millisecond+1500*time.Millisecond, "head after the lease ran out")
		t.Logf("head got the orphaned lock %v after its 500ms lease began", time.Since(start))
		release(t, ls)
		release(t, await(t, waiting[1], 2*time.Second, "second waiter"))
		release(t, await(t, waiting[2], 2*time.Second, "third waiter"))
	})

	t.Run("fixed leases run out in turn", func(t *testing.T) {
		const lease = 300 * time.Millisecond
		srv.Do("HSET", "relay", "dead-holder:1", "1")
		srv.Do("PEXPIRE", "relay", "300")
		var waiting []<-chan result
		for i := 0; i < 4; i++ {
			waiting = append(waiting, goAcquire(fairqueue.New(cs[i%2], "relay", qt, leasehold.WithLeaseTime(lease)), ctx))
			queued(t, srv, "relay", i+1)
		}
		// Nobody releases: each lease runs out and the next waiter takes
		// the lock, within the lease plus 1.5s, under the 3s refresh.
		last := time.Now()
		for i, ch := range waiting {
			ls := await(t, ch, lease+1500*time.Millisecond, "waiter after the lease before ran out")
			t.Logf("waiter %d took over %v after the one before", i, time.Since(last))
			last = time.Now()
			select {
			case <-ls.Lost():
			case <-time.After(5 * time.Second):
				t.Fatal("fixed lease never reported lost")
			}
		}
	})
}

// Pins Redisson issue 5019: an attempt that times out (its ctx ends, or its
// reply is lost and then its ctx ends) leaving its entry in the queue, where
// it blocks everyone behind it for the thread-wait time. Here the entry goes
// at once; TryAcquire never leaves one.
func TestTimedOutAttemptLeavesNoEntry(t *testing.T) {
	srv := redistest.Start(t)
	c, w := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 30*time.Second)
	// With a 30s queue timeout, the 2s polled for below is the waiter's own
	// removal, not its timeout.
	qt := leasehold.WithQueueTimeout(30 * time.Second)
	empty := func(name string) func() bool {
		return func() bool {
			n, _ := srv.Do("EXISTS", "redisson_lock_queue:{"+name+"}", "redisson_lock_timeout:{"+name+"}").AsInt64()
			return n == 0
		}
	}

	t.Run("ctx deadline", func(t *testing.T) {
		held := mustAcquire(t, fairqueue.New(c, "deadline"), ctx)
		actx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		_, err := fairqueue.New(w, "deadline", qt).Acquire(actx)
		wantErr(t, err, context.DeadlineExceeded)
		eventually(t, 2*time.Second, "queue and deadlines removed", empty("deadline"))
		release(t, held)
	})

	t.Run("reply lost", func(t *testing.T) {
		proxy := redistest.NewProxy(t, srv.Addr())
		opt := srv.Option()
		opt.InitAddress = []string{proxy.Addr()}
		pc, err := leasehold.Open(opt)
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		held := mustAcquire(t, fairqueue.New(c, "lost"), ctx)
		l := fairqueue.New(pc, "lost", qt)
		// Load the script first, so that the dropped reply is the queueing
		// attempt's own.
		_, err = l.TryAcquire(ctx)
		wantErr(t, err, lease.ErrNotAcquired)
		proxy.DropNextReply()
		actx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		_, err = l.Acquire(actx)
		wantErr(t, err, context.DeadlineExceeded)
		if proxy.Dropped() != 1 {
			t.Fatalf("the proxy dropped %d replies, want the attempt's", proxy.Dropped())
		}
		eventually(t, 2*time.Second, "queue and deadlines removed", empty("lost"))
		release(t, held)
	})

	t.Run("TryAcquire", func(t *testing.T) {
		held := mustAcquire(t, fairqueue.New(c, "try"), ctx)
		for i := 0; i < 5; i++ {
			_, err := fairqueue.New(w, "try", qt).TryAcquire(ctx)
			wantErr(t, err, lease.ErrNotAcquired)
		}
		if !empty("try")() {
			t.Fatalf("TryAcquire left a queue: %v", queue(t, srv, "try"))
		}
		release(t, held)
	})
}

// Pins Redisson issue 2883: 500 waiters contending for a fair lock with a
// 5s lease stall with the queue left in Redis. Here all 500 get the lock,
// one at a time, and the queue is gone at the end.
func TestFiveHundredWaiters(t *testing.T) {
	const clients, n = 5, 500
	srv := redistest.Start(t)
	cs := make([]*leasehold.Client, clients)
	for i := range cs {
		cs[i] = open(t, srv)
	}
	ctx := ctxTimeout(t, 60*time.Second)
	var inside atomic.Int32
	var done atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := time.Now()
	before := wakeups(cs...)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ls, err := fairqueue.New(cs[i%clients], "crowd", leasehold.WithLeaseTime(5*time.Second)).Acquire(ctx)
			if err != nil {
				errs <- err
				return
			}
			if k := inside.Add(1); k != 1 {
				errs <- fmt.Errorf("%d holders at once", k)
			}
			inside.Add(-1)
			done.Add(1)
			if err := ls.Release(context.Background()); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	woken := wakeups(cs...) - before
	t.Logf("%d waiters served in %v with %d wake-ups (%.2f per release)", n, time.Since(start), woken, float64(woken)/n)
	if done.Load() != n {
		t.Fatalf("%d of %d waiters got the lock", done.Load(), n)
	}
	if n, _ := srv.Do("EXISTS", "crowd", "redisson_lock_queue:{crowd}", "redisson_lock_timeout:{crowd}").AsInt64(); n != 0 {
		t.Fatalf("%d keys of the lock left behind", n)
	}
}

// Waiters sleep while their Client's keeper keeps their places: one script
// per lock per round (every queue timeout / 3) for all of them, not an
// attempt by each. 20 waiters of one Client, the lock held for ten rounds:
// each waiter attempting as it used to would have run 240 scripts. The
// queue timeout is not a whole number of ms in thirds, as the default 5s is
// not: the scripts round the interval down.
func TestWaitersKeptByKeeper(t *testing.T) {
	const n, qt, window = 20, 500 * time.Millisecond, 2 * time.Second
	srv := redistest.Start(t)
	c, w := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 30*time.Second)
	held := mustAcquire(t, fairqueue.New(c, "kept", leasehold.WithLeaseTime(time.Minute)), ctx)
	var waiting []<-chan result
	for i := 0; i < n; i++ {
		waiting = append(waiting, goAcquire(fairqueue.New(w, "kept", leasehold.WithQueueTimeout(qt)), ctx))
		queued(t, srv, "kept", i+1)
	}
	want := queue(t, srv, "kept")
	before := calls(t, srv, "evalsha")
	time.Sleep(window)
	scripts := calls(t, srv, "evalsha") - before
	// A round every 167ms: 12 in the window. The bounds leave room for a
	// loaded machine's late timers either way, and stay far from 240.
	if scripts < 3 || scripts > 30 {
		t.Fatalf("%d scripts in %v of %d waiters kept (want about %d)", scripts, window, n, window/(qt/3))
	}
	// Every place is still there, in order, its deadline ahead of the
	// server's clock: kept, three queue timeouts after the last attempt.
	if got := queue(t, srv, "kept"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("queue %v, want %v", got, want)
	}
	now := serverMs(t, srv)
	for _, owner := range want {
		deadline, err := srv.Do("ZSCORE", "redisson_lock_timeout:{kept}", owner).AsInt64()
		if err != nil || deadline <= now {
			t.Fatalf("waiter %s: deadline %d (%v), server time %d: its place was not kept", owner, deadline, err, now)
		}
	}
	release(t, held)
	for i := range waiting {
		release(t, await(t, waiting[i], 5*time.Second, fmt.Sprintf("waiter %d", i)))
	}
}

// serverMs is the server's clock (TIME), in ms.
func serverMs(t *testing.T, srv *redistest.Server) int64 {
	t.Helper()
	tm, err := srv.Do("TIME").AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := strconv.ParseInt(tm[0], 10, 64)
	us, _ := strconv.ParseInt(tm[1], 10, 64)
	return s*1000 + us/1000
}
