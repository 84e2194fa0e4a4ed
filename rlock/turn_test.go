package rlock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

// Every waiter gets its turn: while the goroutines of one Client churn on a
// lock, a waiter of any kind elsewhere gets it within a bound (docs/rlock.md,
// "Every waiter gets its turn"). These tests pin the four kinds of waiter a
// busy Client used to starve: one that listens on the lock's channel,
// one that may only poll, a TryAcquire loop and a Redisson client.

// busy has n goroutines of c take and give back the lock name, each holding
// it hold, until the test's end; it counts their acquisitions.
type busy struct {
	grants atomic.Int64
	stop   chan struct{}
	wg     sync.WaitGroup
}

func churn(t *testing.T, c *leasehold.Client, name string, n int, hold time.Duration) *busy {
	t.Helper()
	b := &busy{stop: make(chan struct{})}
	l := rlock.New(c, name)
	for range n {
		b.wg.Go(func() {
			for {
				select {
				case <-b.stop:
					return
				default:
				}
				ls, err := l.Acquire(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				b.grants.Add(1)
				time.Sleep(hold)
				if err := ls.Release(context.Background()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	t.Cleanup(func() { close(b.stop); b.wg.Wait() })
	eventually(t, 10*time.Second, "the busy goroutines churning", func() bool { return b.grants.Load() > 50 })
	return b
}

// The bounds these tests hold a waiter to, generous for a busy 2-core
// machine: a turn of the busy Client is at most 8 acquisitions (its 8
// goroutines), and a waiter elsewhere waits for at most the turn under way
// and the next; 40 leaves room for a few yields it was too slow to use. On
// the previous scheme (a Client passing the lock among its goroutines 4
// times, then publishing while its own waiters tried first) the listener
// waited hundreds of acquisitions, and the other three never got the lock.
const (
	turnsOfGrants = 40
	waitBound     = 5 * time.Second
)

// took times one acquisition by take against the busy Client's churn: how
// long it waited, and how many times the busy Client took the lock
// meanwhile.
func took(t *testing.T, b *busy, take func(ctx context.Context) (*lease.Lease, error)) (time.Duration, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	before, start := b.grants.Load(), time.Now()
	ls, err := take(ctx)
	waited, passed := time.Since(start), b.grants.Load()-before
	if err != nil {
		t.Fatalf("after %v and %d acquisitions of the busy Client: %v", waited, passed, err)
	}
	time.Sleep(time.Millisecond)
	release(t, ls)
	return waited, passed
}

// process is one process's waiters on a lock in race: take acquires it and
// returns the function that gives it back.
type process struct {
	who     byte
	waiters int
	hold    time.Duration
	take    func(ctx context.Context) (func() error, error)
}

// locker is take of a leasehold lock.
func locker(l lease.Locker) func(ctx context.Context) (func() error, error) {
	return func(ctx context.Context) (func() error, error) {
		ls, err := l.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		return func() error { return ls.Release(context.Background()) }, nil
	}
}

// race runs the waiters of ps on one lock for run, each taking it, holding
// it for its process's hold and giving it back as fast as it can. It
// returns who took the lock, in order, and each process's longest wait.
func race(t *testing.T, run time.Duration, ps ...process) (log []byte, longest map[byte]time.Duration) {
	t.Helper()
	ctx := ctxTimeout(t, run+30*time.Second)
	var mu sync.Mutex
	longest = map[byte]time.Duration{}
	var wg sync.WaitGroup
	deadline := time.Now().Add(run)
	for _, p := range ps {
		for range p.waiters {
			wg.Go(func() {
				for time.Now().Before(deadline) {
					start := time.Now()
					unlock, err := p.take(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					log = append(log, p.who)
					longest[p.who] = max(longest[p.who], time.Since(start))
					mu.Unlock()
					time.Sleep(p.hold)
					if err := unlock(); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	return log, longest
}

// streak is the longest run of who's acquisitions in log.
func streak(log []byte, who byte) int {
	longest, run := 0, 0
	for _, w := range log {
		if w != who {
			run = 0
			continue
		}
		run++
		longest = max(longest, run)
	}
	return longest
}

// share is who's share of the acquisitions in log.
func share(log []byte, who byte) float64 {
	n := 0
	for _, w := range log {
		if w == who {
			n++
		}
	}
	return float64(n) / float64(len(log))
}

// Two processes, both listening: A's 4 goroutines hold the lock 20ms each
// time, B's 6 hold it 1ms. A's turn is at most its 4 waiters' acquisitions,
// then it yields to B, whose waiter answers the unlock message: A never
// holds the lock more than 8 times in a row (two turns, for a yield B was
// too slow to use on a busy machine). Before turns, A's own waiter won the
// race after each release that published, and A held it 9 times in a row
// and more (15 here), while B's goroutines waited.
func TestTurnListenerElsewhere(t *testing.T) {
	srv := redistest.Start(t)
	const name = "turn-listener"
	log, _ := race(t, 3*time.Second,
		process{'A', 4, 20 * time.Millisecond, locker(rlock.New(open(t, srv), name))},
		process{'B', 6, time.Millisecond, locker(rlock.New(open(t, srv), name))})
	t.Logf("%d acquisitions: %s", len(log), log)
	if n := streak(log, 'A'); n > 8 {
		t.Errorf("A held the lock %d times in a row while B waited, want at most 8", n)
	}
}

// A waiter whose Client may not subscribe (an ACL without SUBSCRIBE) polls,
// and leaves its mark at each attempt that fails: the busy Client yields to
// it before its next poll is due.
func TestTurnPollerElsewhere(t *testing.T) {
	srv := redistest.Start(t)
	b := churn(t, open(t, srv), "turn-poller", 8, time.Millisecond)
	l := rlock.New(locktest.OpenDenied(t, srv, "subscribe"), "turn-poller")
	for i := range 5 {
		waited, passed := took(t, b, l.Acquire)
		if waited > waitBound {
			t.Fatalf("acquisition %d waited %v (%d acquisitions of the busy Client), want at most %v", i+1, waited, passed, waitBound)
		}
	}
	if locktest.Refused(t, srv, "subscribe") == 0 {
		t.Fatal("the poller's subscription was never refused: the test did not test its case")
	}
}

// A TryAcquire every 10ms in another process, the shape of a periodic job:
// its second failure says when its next try is due, and that try finds the
// lock free. It gets the lock by its third try after each time it held it.
func TestTurnTryAcquireLoopElsewhere(t *testing.T) {
	srv := redistest.Start(t)
	churn(t, open(t, srv), "turn-try", 8, time.Millisecond)
	l := rlock.New(open(t, srv), "turn-try")
	ctx := ctxTimeout(t, 60*time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for i := range 5 {
		tries := 0
		for {
			<-tick.C
			tries++
			ls, err := l.TryAcquire(ctx)
			if errors.Is(err, lease.ErrNotAcquired) {
				// A try may miss when the machine stalls past the
				// mark's margin; 10 leave room for a few.
				if tries == 10 {
					t.Fatalf("round %d: no lock in %d tries", i+1, tries)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			release(t, ls)
			break
		}
		t.Logf("round %d: the lock at try %d", i+1, tries)
	}
}

// A Redisson client (its own scripts and subscription) with four threads
// waiting on the lock, beside four goroutines of a busy Client holding it
// 20ms each time: Redisson's share of the acquisitions is at least a
// quarter of an even one, and the busy Client holds the lock no more times
// in a row than a turn of its own (8, with slack) or than it makes up for
// Redisson's run before it (Redisson's threads take the lock again at once
// after they unlock, and the Client's next turn is as long as that run).
// Before turns, the woken Redisson thread lost the race to the Client's own
// waiters after each release that published: 50 in a row.
func TestTurnRedissonElsewhere(t *testing.T) {
	srv := redistest.Start(t)
	const name = "turn-redisson"
	java, err := redistest.NewRedisson(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer java.Close()
	log, longest := race(t, 3*time.Second,
		process{'L', 4, 20 * time.Millisecond, locker(rlock.New(open(t, srv), name))},
		process{'R', 4, time.Millisecond, func(ctx context.Context) (func() error, error) { return java.Lock(ctx, name) }})
	t.Logf("%d acquisitions, Redisson's share %.2f, its longest wait %v: %s", len(log), share(log, 'R'), longest['R'], log)
	if n, r := streak(log, 'L'), streak(log, 'R'); n > max(8, r+4) {
		t.Errorf("leasehold held the lock %d times in a row while Redisson waited, want at most 8 or Redisson's longest run (%d) and 4", n, r)
	}
	if s := share(log, 'R'); s < 0.5/4 {
		t.Errorf("Redisson's share %.2f, want at least a quarter of an even share (0.125)", s)
	}
	if w := longest['R']; w > waitBound {
		t.Errorf("a Redisson thread waited %v, want at most %v", w, waitBound)
	}
}

// Processes share a contended lock in proportion to their waiters: two
// leasehold Clients of 4 and 2 goroutines and a Redisson client of 4
// threads, all taking the lock as fast as they can, each holding it 1ms. No
// process gets less than a quarter of an even share, and the Client with
// more waiters gets more (before turns, the one with 2 got more: 0.44
// against 0.39).
func TestTurnShares(t *testing.T) {
	srv := redistest.Start(t)
	const name = "turn-shares"
	java, err := redistest.NewRedisson(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer java.Close()
	log, longest := race(t, 4*time.Second,
		process{'A', 4, time.Millisecond, locker(rlock.New(open(t, srv), name))},
		process{'B', 2, time.Millisecond, locker(rlock.New(open(t, srv), name))},
		process{'R', 4, time.Millisecond, func(ctx context.Context) (func() error, error) { return java.Lock(ctx, name) }})
	t.Logf("%d acquisitions; shares: A (4 waiters) %.2f, B (2) %.2f, Redisson (4) %.2f; longest waits %v, %v, %v",
		len(log), share(log, 'A'), share(log, 'B'), share(log, 'R'), longest['A'], longest['B'], longest['R'])
	for _, who := range []byte("ABR") {
		if s := share(log, who); s < 1.0/3/4 {
			t.Errorf("%c's share %.2f, want at least a quarter of an even share (%.3f)", who, s, 1.0/3/4)
		}
		if w := longest[who]; w > waitBound {
			t.Errorf("a waiter of %c waited %v, want at most %v", who, w, waitBound)
		}
	}
	if share(log, 'A') <= share(log, 'B') {
		t.Errorf("the Client of 4 waiters got %.2f, the one of 2 %.2f: want more for more waiters", share(log, 'A'), share(log, 'B'))
	}
}
