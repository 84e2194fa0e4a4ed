package semaphore_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/script"
	"github.com/leasehold/leasehold/semaphore"
)

// newSet returns the semaphore name on c with its total set to n.
func newSet(t *testing.T, c *leasehold.Client, name string, n int, opts ...leasehold.LockOption) *semaphore.Semaphore {
	t.Helper()
	s := semaphore.New(c, name, opts...)
	if ok, err := s.TrySetPermits(context.Background(), n); err != nil || !ok {
		t.Fatalf("TrySetPermits(%d) = %v, %v", n, ok, err)
	}
	return s
}

// taken is how many permits of name are held (entries of {NAME}:timeout).
func taken(t *testing.T, srv *redistest.Server, name string) int64 {
	t.Helper()
	n, err := srv.Do("ZCARD", script.KeysOf(name).SemaphoreTimeout).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// count is the integer NAME holds.
func count(t *testing.T, srv *redistest.Server, name string) int64 {
	t.Helper()
	n, err := srv.Do("GET", name).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func waiters(c *leasehold.Client) int { return c.Stats().Waiters }

// Many goroutines on three Clients hammer a semaphore of 3 permits, each
// holding its permit a moment: never more than 3 hold at once, as counted in
// the process and as Redis holds them, and every one gets its turn.
func TestBoundHeld(t *testing.T) {
	srv := redistest.Start(t)
	cs := []*leasehold.Client{open(t, srv), open(t, srv), open(t, srv)}
	const permits, goroutines, rounds = 3, 12, 8
	newSet(t, cs[0], "bound", permits)
	ctx := ctxTimeout(t, 60*time.Second)
	var inside, most atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			s := semaphore.New(cs[g%len(cs)], "bound")
			for range rounds {
				ls, err := s.Acquire(ctx)
				if err != nil {
					errs <- err
					return
				}
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(2 * time.Millisecond)
				inside.Add(-1)
				if err := ls.Release(context.Background()); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	stop := make(chan struct{})
	var overRedis atomic.Int64
	go func() { // Redis' own count, sampled
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n, err := srv.Do("ZCARD", script.KeysOf("bound").SemaphoreTimeout).AsInt64(); err == nil && n > permits {
				overRedis.Store(n)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	wg.Wait()
	close(stop)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if m := most.Load(); m > permits || m < 2 {
		t.Fatalf("at most %d held at once, want 2 or 3 of the %d permits", m, permits)
	}
	if n := overRedis.Load(); n != 0 {
		t.Fatalf("Redis held %d permits of %d", n, permits)
	}
	if n := count(t, srv, "bound"); n != permits || taken(t, srv, "bound") != 0 {
		t.Fatalf("after every release: %d available, %d taken; want %d, 0", n, taken(t, srv, "bound"), permits)
	}
}

// A permit is a lease: the watchdog renews it (its expiry in Redis moves on
// while the holder works for several leases), a fixed lease runs out (Lost
// closes, and the permit comes back), Close gives permits back, and the
// lease's Token is 0.
func TestPermitIsALease(t *testing.T) {
	srv := redistest.Start(t)
	const watchdog = 300 * time.Millisecond
	c := open(t, srv, leasehold.WithWatchdog(watchdog))
	ctx := ctxTimeout(t, 20*time.Second)

	t.Run("watchdog", func(t *testing.T) {
		s := newSet(t, c, "renewed", 1)
		ls := mustAcquire(t, s, ctx)
		if ls.Token() != 0 {
			t.Fatalf("token %d, want 0: a semaphore draws none", ls.Token())
		}
		time.Sleep(3 * watchdog)
		if isLost(ls) {
			t.Fatalf("lost under the watchdog: %v", ls.Err())
		}
		// The permit's id is its lease's: lua.PermitID of the owner.
		score, err := srv.Do("ZSCORE", script.KeysOf("renewed").SemaphoreTimeout, lua.PermitID(ls.Owner(), 0)).AsFloat64()
		if err != nil {
			t.Fatalf("the lease's permit id: %v", err)
		}
		now, _ := srv.Do("TIME").AsStrSlice()
		sec, _ := strconv.ParseInt(now[0], 10, 64)
		usec, _ := strconv.ParseInt(now[1], 10, 64)
		if left := int64(score) - sec*1000 - usec/1000; left <= 0 || left > watchdog.Milliseconds() {
			t.Fatalf("permit expires in %dms, want within the %v lease", left, watchdog)
		}
		release(t, ls)
	})
	t.Run("fixed lease", func(t *testing.T) {
		s := newSet(t, c, "fixed", 1, leasehold.WithLeaseTime(200*time.Millisecond))
		ls := mustAcquire(t, s, ctx)
		select {
		case <-ls.Lost():
		case <-time.After(5 * time.Second):
			t.Fatal("fixed lease not lost")
		}
		wantErr(t, ls.Err(), lease.ErrLost)
		next := mustAcquire(t, semaphore.New(open(t, srv), "fixed"), ctxTimeout(t, 5*time.Second))
		release(t, next)
		err := ls.Release(ctx)
		wantErr(t, err, lease.ErrNotHeld)
		if n := count(t, srv, "fixed"); n != 1 {
			t.Fatalf("%d available after the late release, want 1: a permit given back twice", n)
		}
	})
	t.Run("close gives back", func(t *testing.T) {
		other := open(t, srv)
		s := newSet(t, other, "closed", 2)
		a, b := mustAcquire(t, s, ctx), mustAcquire(t, s.Weighted(1), ctx)
		other.Close()
		wantErr(t, a.Err(), lease.ErrClosed)
		wantErr(t, b.Err(), lease.ErrClosed)
		if n, t2 := count(t, srv, "closed"), taken(t, srv, "closed"); n != 2 || t2 != 0 {
			t.Fatalf("after Close: %d available, %d taken; want 2, 0", n, t2)
		}
	})
}

// A holder whose process dies cannot release: its permits come back when
// their lease has run out in Redis, given back by the next attempt (here a
// waiter's, woken at the earliest expiry the failed attempt reported). The
// dead holder is a Client whose connection is cut and refused: it can
// neither renew nor release, as a killed process.
func TestDeadHolderPermitsComeBack(t *testing.T) {
	srv := redistest.Start(t)
	p := redistest.NewProxy(t, srv.Addr())
	opt := srv.Option()
	opt.InitAddress = []string{p.Addr()}
	const watchdog = 500 * time.Millisecond
	dead := openAt(t, opt, leasehold.WithWatchdog(watchdog))
	live := open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	s := newSet(t, dead, "dead", 3)
	held := mustAcquire(t, s.Weighted(3), ctx)
	p.Refuse(true)
	p.Cut()
	cut := time.Now()
	ls := mustAcquire(t, semaphore.New(live, "dead").Weighted(3), ctx)
	took := time.Since(cut)
	t.Logf("the dead holder's 3 permits came back %v after its connection was cut (lease %v)", took, watchdog)
	if took > watchdog+2*time.Second {
		t.Fatalf("permits came back %v after the cut, lease %v", took, watchdog)
	}
	<-held.Lost()
	release(t, ls)
}

// Not reentrant: Acquire under a permit's lease context takes another
// permit, under another owner; with one permit it waits for the first.
func TestNotReentrant(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	s := newSet(t, c, "once", 2)
	first := mustAcquire(t, s, ctx)
	second := mustAcquire(t, s, first.Context())
	if second.Owner() == first.Owner() || first.HoldCount() != 1 || second.HoldCount() != 1 {
		t.Fatalf("second permit: owner %q (first %q), hold counts %d, %d", second.Owner(), first.Owner(), first.HoldCount(), second.HoldCount())
	}
	if n := taken(t, srv, "once"); n != 2 {
		t.Fatalf("%d permits taken, want 2", n)
	}
	_, err := s.TryAcquire(second.Context())
	wantErr(t, err, lease.ErrNotAcquired)
	release(t, second)
	release(t, first)
}

// A semaphore whose permits were never set: Acquire waits, as Redisson's
// does, and TrySetPermits wakes it at once (the message, not a timer: the
// lease is 30s). TryAcquire fails as on a full semaphore.
func TestNeverSetWaits(t *testing.T) {
	srv := redistest.Start(t)
	c, other := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	s := semaphore.New(c, "unset")
	_, err := s.TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	if n, err := s.AvailablePermits(ctx); err != nil || n != 0 {
		t.Fatalf("AvailablePermits = %d, %v; want 0", n, err)
	}
	f := s.AcquireAsync(ctx)
	eventually(t, 5*time.Second, "waiter waiting", func() bool { return waiters(c) == 1 })
	set := time.Now()
	if ok, err := semaphore.New(other, "unset").TrySetPermits(ctx, 1); !ok || err != nil {
		t.Fatalf("TrySetPermits = %v, %v", ok, err)
	}
	release(t, result(t, f, 5*time.Second))
	if d := time.Since(set); d > 2*time.Second {
		t.Fatalf("woke %v after the permits were set", d)
	}
	if ok, err := s.TrySetPermits(ctx, 5); ok || err != nil {
		t.Fatalf("second TrySetPermits = %v, %v; want false: set already", ok, err)
	}
}

// A release wakes as many waiters as permits came free, not one and not
// all: 3 permits given back at once let 3 of 5 waiters in, each woken once,
// and the other 2 sleep on. The Clients are made with leasehold.New, whose
// waiters hear no invalidations, so that every wake-up counted is a message's.
func TestReleaseWakesAsManyAsFreed(t *testing.T) {
	srv := redistest.Start(t)
	holder := open(t, srv)
	c, _ := untracked(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	held := mustAcquire(t, newSet(t, holder, "freed", 3).Weighted(3), ctx)
	s := semaphore.New(c, "freed")
	fs := make([]*lease.Future, 5)
	for i := range fs {
		fs[i] = s.AcquireAsync(ctx)
	}
	eventually(t, 5*time.Second, "5 waiters", func() bool { return waiters(c) == 5 })
	time.Sleep(50 * time.Millisecond) // past each waiter's try on Ready
	before := c.Stats().Wakeups
	release(t, held)
	eventually(t, 5*time.Second, "3 waiters in", func() bool {
		n := 0
		for _, f := range fs {
			if isDone(f) {
				n++
			}
		}
		return n == 3
	})
	time.Sleep(100 * time.Millisecond)
	if woke := c.Stats().Wakeups - before; woke != 3 {
		t.Fatalf("the release of 3 permits woke %d waiters, want 3", woke)
	}
	var in, rest []*lease.Future
	for _, f := range fs {
		if isDone(f) {
			in = append(in, f)
		} else {
			rest = append(rest, f)
		}
	}
	if len(in) != 3 || waiters(c) != 2 {
		t.Fatalf("%d in, %d waiting; want 3, 2", len(in), waiters(c))
	}
	for _, f := range append(in, rest...) {
		release(t, result(t, f, 5*time.Second))
	}
}

// A waiter wakes at the earliest permit expiry its failed attempt reported,
// with no message at all: a permit Java took with a 300ms lease runs out
// and the waiter takes it then (the watchdog lease is 30s, so no timer of
// its own explains it). leasehold.New: no invalidations either.
func TestWakesAtEarliestExpiry(t *testing.T) {
	srv := redistest.Start(t)
	c, _ := untracked(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	srv.Do("SET", "expiring", "0")
	srv.Do("ZADD", script.KeysOf("expiring").SemaphoreTimeout, strconv.FormatInt(time.Now().Add(300*time.Millisecond).UnixMilli(), 10), "java-permit")
	start := time.Now()
	ls := mustAcquire(t, semaphore.New(c, "expiring"), ctx)
	took := time.Since(start)
	if took < 250*time.Millisecond || took > 2*time.Second {
		t.Fatalf("took the expired permit after %v, want about 300ms", took)
	}
	release(t, ls)
}

// A change of NAME that publishes nothing (a tool's SET) wakes a waiter
// through the invalidation of NAME: its lease is 30s and no permit expires,
// so only the invalidation explains a prompt wake-up.
func TestInvalidationWakes(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	srv.Do("SET", "tracked", "0")
	f := semaphore.New(c, "tracked").AcquireAsync(ctx)
	eventually(t, 5*time.Second, "waiter waiting", func() bool { return waiters(c) == 1 })
	time.Sleep(100 * time.Millisecond) // its attempt on Ready, and Track
	set := time.Now()
	srv.Do("SET", "tracked", "1")
	release(t, result(t, f, 5*time.Second))
	if d := time.Since(set); d > 2*time.Second {
		t.Fatalf("woke %v after NAME changed", d)
	}
}

// AddPermits changes the total, either way; taking permits away leaves them
// with their holders and makes new takers wait until enough come back.
// AvailablePermits counts permits whose lease ran out as available.
func TestAddPermits(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	s := newSet(t, c, "add", 3)
	a, b := mustAcquire(t, s, ctx), mustAcquire(t, s, ctx)
	if err := s.AddPermits(ctx, -2); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.AvailablePermits(ctx); n != -1 {
		t.Fatalf("available %d after taking 2 of 3 away with 2 held, want -1", n)
	}
	_, err := s.TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	f := s.AcquireAsync(ctx)
	release(t, a)
	release(t, b)
	release(t, result(t, f, 5*time.Second))
	if err := s.AddPermits(ctx, 4); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.AvailablePermits(ctx); n != 5 {
		t.Fatalf("available %d, want 5", n)
	}
	srv.Do("ZADD", script.KeysOf("add").SemaphoreTimeout, "1", "expired-java-permit")
	if n, _ := s.AvailablePermits(ctx); n != 6 {
		t.Fatalf("available %d with an expired permit, want 6", n)
	}
	if err := semaphore.New(c, "fresh").AddPermits(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if n := count(t, srv, "fresh"); n != 2 {
		t.Fatalf("AddPermits on a semaphore never set left %d, want 2", n)
	}
}

// The observer hears permits like leases: acquired, renewed, released,
// lost, with Lock "semaphore" and token 0.
func TestObserved(t *testing.T) {
	srv := redistest.Start(t)
	var mu sync.Mutex
	var events []lease.Event
	c := open(t, srv, leasehold.WithWatchdog(150*time.Millisecond), leasehold.WithObserver(lease.ObserverFunc(func(e lease.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	})))
	ctx := ctxTimeout(t, 10*time.Second)
	s := newSet(t, c, "observed", 2)
	ls := mustAcquire(t, s.Weighted(2), ctx)
	eventually(t, 5*time.Second, "a renewal", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(events) > 0 && events[len(events)-1].Kind == lease.Renewed
	})
	release(t, ls)
	mu.Lock()
	defer mu.Unlock()
	seen := map[lease.Kind]bool{}
	for _, e := range events {
		if e.Lock != "semaphore" || e.Name != "observed" || e.Token != 0 {
			t.Fatalf("event %+v, want Lock semaphore, Name observed, token 0", e)
		}
		seen[e.Kind] = true
	}
	for _, k := range []lease.Kind{lease.Acquired, lease.Renewed, lease.Released} {
		if !seen[k] {
			t.Errorf("no %v event", k)
		}
	}
}

// Keys: a semaphore's count stays (it is the semaphore), but once every
// permit is back nothing else is left: the permits' set and the claims of
// waiters that got in or gave up are gone.
func TestOnlyTheCountStays(t *testing.T) {
	srv := redistest.Start(t)
	c, d := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	s := newSet(t, c, "tidy", 3)
	one := mustAcquire(t, s, ctx)
	two := mustAcquire(t, s.Weighted(2), ctx)
	f := semaphore.New(d, "tidy").Weighted(3).AcquireAsync(ctx)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err := semaphore.New(d, "tidy").Weighted(2).Acquire(short)
	cancel()
	wantErr(t, err, context.DeadlineExceeded)
	release(t, one)
	release(t, two)
	release(t, result(t, f, 5*time.Second))
	eventually(t, 5*time.Second, "only NAME left", func() bool {
		keys, _ := srv.Do("KEYS", "*").AsStrSlice()
		return len(keys) == 1 && keys[0] == "tidy"
	})
}
