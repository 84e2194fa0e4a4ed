package rlock_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/script"
)

// calls reads from INFO commandstats how often srv ran each command, by
// its lower-case name: a script's own calls count too.
func calls(t *testing.T, srv *redistest.Server) map[string]int64 {
	t.Helper()
	info, err := srv.Do("INFO", "commandstats").ToString()
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int64{}
	for _, m := range regexp.MustCompile(`cmdstat_([a-z|]+):calls=(\d+)`).FindAllStringSubmatch(info, -1) {
		n[m[1]], _ = strconv.ParseInt(m[2], 10, 64)
	}
	return n
}

// heldAndAwaited takes l, then starts a waiter on it on the same Client c,
// and returns once that waiter waits, subscribed and past its try on Ready.
func heldAndAwaited(t *testing.T, ctx context.Context, c *leasehold.Client, l *rlock.Lock) (*lease.Lease, *lease.Future) {
	t.Helper()
	first := mustAcquire(t, l, ctx)
	f := l.AcquireAsync(ctx)
	eventually(t, 5*time.Second, "waiter subscribed", func() bool {
		s := c.Stats()
		return s.Waiters == 1 && s.Subscriptions == 1
	})
	time.Sleep(100 * time.Millisecond) // past the waiter's try on Ready
	return first, f
}

// A release with a waiter of the same Client, and nobody else listening,
// passes the lock to it in one script (lock_handoff): no unlock message, no
// acquire by the waiter. Its token is above the releaser's.
func TestHandoffInOneScript(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	l := rlock.New(c, "passed")
	first, f := heldAndAwaited(t, ctx, c, l)
	before := calls(t, srv)
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	second := locktest.Result(t, f, 5*time.Second)
	after := calls(t, srv)
	if n := after["evalsha"] - before["evalsha"]; n != 1 {
		t.Errorf("%d scripts from the release to the waiter's lease, want 1", n)
	}
	if n := after["publish"] - before["publish"]; n != 0 {
		t.Errorf("%d unlock messages, want none", n)
	}
	if second.Token() <= first.Token() {
		t.Errorf("token %d after %d: want it higher", second.Token(), first.Token())
	}
	if owner, err := srv.Do("HKEYS", "passed").AsStrSlice(); err != nil || len(owner) != 1 || owner[0] != second.Owner() {
		t.Errorf("the lock's fields %v (%v), want the waiter's owner %s alone", owner, err, second.Owner())
	}
	release(t, second)
}

// A waiter elsewhere (another Client, as another process or a Redisson
// client would be) waits for at most a turn of the busy Client: then a
// release publishes, and the Client yields to it. It gets the lock while
// eight goroutines of one Client take and give it back without a pause.
// The bound is generous for a busy machine; releases that kept passing the
// lock inside the churning Client would leave the remote waiter to its TTL
// timer (30s).
func TestHandoffPassesOverARemoteWaiterBoundedly(t *testing.T) {
	srv := redistest.Start(t)
	local, remote := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 30*time.Second)
	l := rlock.New(local, "churn")
	stop := make(chan struct{})
	var handoffs atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				ls, err := l.Acquire(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				handoffs.Add(1)
				time.Sleep(200 * time.Microsecond) // the work
				if err := ls.Release(context.Background()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	eventually(t, 5*time.Second, "the local goroutines churning", func() bool { return handoffs.Load() > 100 })
	start := time.Now()
	ls, err := rlock.New(remote, "churn").Acquire(ctxTimeout(t, 10*time.Second))
	if err != nil {
		t.Fatalf("remote waiter: %v after %v (%d local acquisitions meanwhile)", err, time.Since(start), handoffs.Load())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("remote waiter took %v", d)
	}
	release(t, ls)
}

// A Client's turn on a lock is bounded while another client listens on the
// lock's channel (here a connection subscribed to it that never takes the
// lock): its releases pass the lock without asking at most once to each of
// its waiters that stood in line when the turn began, then ask, and, asked,
// publish. Eight goroutines stand for at most seven waiters, so n
// acquisitions take at least n/8-1 unlock messages. With nobody else
// listening, the same churn is passed in one script almost every time (a
// release finds no waiter to pick now and then), and it asks once a turn.
func TestTurnBoundedWhileOthersListen(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := ctxTimeout(t, 60*time.Second)
	l := rlock.New(c, "bounded")
	churn := func(n int64) (published, counted int64) {
		before := calls(t, srv)
		var taken atomic.Int64
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for taken.Add(1) <= n {
					ls, err := l.Acquire(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					if err := ls.Release(ctx); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		after := calls(t, srv)
		return after["publish"] - before["publish"], after["pubsub|numsub"] - before["pubsub|numsub"]
	}
	const n = 1000
	alone, counted := churn(n)
	// A turn serves every waiter standing when it began: with eight
	// goroutines, most turns are several passes long.
	if most := int64(n / 2); counted > most {
		t.Errorf("%d counts of the channel's listeners in %d acquisitions with nobody else listening, want at most %d", counted, n, most)
	}
	conn, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	channel := script.KeysOf("bounded").Channel
	if _, err := fmt.Fprintf(conn, "*2\r\n$9\r\nSUBSCRIBE\r\n$%d\r\n%s\r\n", len(channel), channel); err != nil {
		t.Fatal(err)
	}
	// The confirmation: "*3 $9 subscribe $len channel :1".
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := bufio.NewReader(conn).ReadString(':'); err != nil {
		t.Fatalf("the listener's subscription: %v", err)
	}
	listened, _ := churn(n)
	t.Logf("%d acquisitions: %d unlock messages and %d counts alone, %d unlock messages with a listener", n, alone, counted, listened)
	if least := int64(n/8 - 1); listened < least {
		t.Errorf("%d unlock messages in %d acquisitions while another listened, want at least %d", listened, n, least)
	}
	if alone >= listened {
		t.Errorf("%d unlock messages alone, %d with a listener: want fewer alone", alone, listened)
	}
}

// A waiter that gives up while a release is passing it the lock leaves
// nothing held: the lock, passed to its owner, is given back.
func TestHandoffToAWaiterThatLeft(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	l := rlock.New(c, "left")
	for i := range 50 {
		first := mustAcquire(t, l, ctx)
		wctx, cancel := context.WithCancel(ctx)
		f := l.AcquireAsync(wctx)
		eventually(t, 5*time.Second, "waiter waiting", func() bool { return c.Stats().Waiters == 1 })
		// Cancel the wait as the release passes the lock: one or the
		// other comes first, at random.
		go cancel()
		if err := first.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if second, err := f.Result(); err == nil {
			release(t, second)
		} else if !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: waiter: %v", i, err)
		}
		eventually(t, 5*time.Second, "the lock free", func() bool {
			n, err := srv.Do("EXISTS", "left").AsInt64()
			return err == nil && n == 0
		})
	}
}

// An ACL that refuses PUBSUB NUMSUB costs the passes that must ask: a
// release that cannot tell whether others want the lock frees it and
// publishes, and the waiter takes it. A turn's passes, which do not ask,
// still pass it: a lone waiter at a time makes every release ask.
func TestHandoffRefusedCount(t *testing.T) {
	srv := redistest.Start(t)
	c := locktest.OpenDenied(t, srv, "pubsub")
	ctx := ctxTimeout(t, 20*time.Second)
	l := rlock.New(c, "counted")
	held := mustAcquire(t, l, ctx)
	for i := range 3 {
		f := l.AcquireAsync(ctx)
		eventually(t, 5*time.Second, "waiter subscribed", func() bool {
			s := c.Stats()
			return s.Waiters == 1 && s.Subscriptions == 1
		})
		time.Sleep(100 * time.Millisecond) // past the waiter's try on Ready
		before := calls(t, srv)
		if err := held.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		held = locktest.Result(t, f, 5*time.Second)
		if n := calls(t, srv)["publish"] - before["publish"]; n != 1 {
			t.Errorf("release %d: %d unlock messages, want 1", i+1, n)
		}
	}
	release(t, held)
}

// An Acquire on a lock that goroutines of its Client already wait for makes
// no attempt: the lock is held, or one of them has been woken to take it. It
// waits behind them, and the lock comes to the Client's waiters in the order
// they came, the releases within the Client passing it on.
func TestAcquireWaitsBehindItsClientsWaiters(t *testing.T) {
	srv := redistest.Start(t)
	local, remote := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	held := mustAcquire(t, rlock.New(remote, "queued"), ctx)
	l := rlock.New(local, "queued")
	first := l.AcquireAsync(ctx)
	eventually(t, 5*time.Second, "first waiter subscribed", func() bool {
		s := local.Stats()
		return s.Waiters == 1 && s.Subscriptions == 1
	})
	time.Sleep(100 * time.Millisecond) // past its try on Ready
	before := calls(t, srv)
	second := l.AcquireAsync(ctx)
	eventually(t, 5*time.Second, "second waiter waiting", func() bool { return local.Stats().Waiters == 2 })
	time.Sleep(100 * time.Millisecond) // time for an attempt it should not make
	// lock_acquire on a lock held by another reads its PTTL; nothing else
	// running here does (the remote hold's renewal, were it due, does not).
	if n := calls(t, srv)["pttl"] - before["pttl"]; n != 0 {
		t.Errorf("%d attempts by the second waiter, want none", n)
	}
	release(t, held)
	a := locktest.Result(t, first, 5*time.Second)
	select {
	case <-second.Done():
		t.Fatal("the second waiter got the lock while the first held it")
	case <-time.After(100 * time.Millisecond):
	}
	release(t, a)
	release(t, locktest.Result(t, second, 5*time.Second))
}
