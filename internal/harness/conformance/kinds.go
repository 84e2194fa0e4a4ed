package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/election"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/fence"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/rw"
	"github.com/leasehold/leasehold/script"
	"github.com/leasehold/leasehold/semaphore"
)

// queueLen reads with rc how many waiters are in the queue of the fair
// lock name.
func queueLen(t *testing.T, rc rueidis.Client, name string) int64 {
	t.Helper()
	n, err := rc.Do(context.Background(), rc.B().Llen().Key(script.KeysOf(name).FairQueue).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A fair lock goes to its waiters in the order they asked, each woken by
// the release before it (the holder's lease is a minute).
func testFairQueueOrder(t *testing.T, suite Suite) {
	srv := suite.NewServer(t)
	ctx := ctxTimeout(t, 30*time.Second)
	rc := srv.Raw(t)
	held := acquire(t, ctx, fairqueue.New(srv.Open(), "fifo", leasehold.WithLeaseTime(time.Minute)))
	const waiters = 4
	var fs []*lease.Future
	for i := range waiters {
		fs = append(fs, fairqueue.New(srv.Open(), "fifo").AcquireAsync(ctx))
		// The next waiter asks only once this one has its place.
		eventually(t, 5*time.Second, "waiter queued", func() bool { return queueLen(t, rc, "fifo") == int64(i+1) })
	}
	// A TryAcquire never jumps the queue.
	_, err := fairqueue.New(srv.Open(), "fifo").TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	release(t, held)
	for i, f := range fs {
		ls := result(t, f, 5*time.Second)
		for _, later := range fs[i+1:] {
			pending(t, later, "a later waiter while an earlier one holds")
		}
		release(t, ls)
	}
}

// Readers share the lock; a writer waits for every reader, and readers
// that come after wait for the writer.
func testReadWrite(t *testing.T, suite Suite) {
	srv := suite.NewServer(t)
	ctx := ctxTimeout(t, 30*time.Second)
	a, b, w := rw.New(srv.Open(), "doc"), rw.New(srv.Open(), "doc"), rw.New(srv.Open(), "doc")
	ra := acquire(t, ctx, a.Read())
	rb := acquire(t, ctx, b.Read())
	fw := w.Write().AcquireAsync(ctx)
	eventually(t, 5*time.Second, "writer waiting", func() bool {
		locked, err := w.IsLocked(ctx)
		return err == nil && locked
	})
	release(t, ra)
	time.Sleep(50 * time.Millisecond) // one reader still holds: the writer must not get in
	pending(t, fw, "writer while a reader holds")
	release(t, rb)
	wl := result(t, fw, 5*time.Second)
	fr := a.Read().AcquireAsync(ctx)
	time.Sleep(50 * time.Millisecond)
	pending(t, fr, "reader while the writer holds")
	release(t, wl)
	release(t, result(t, fr, 5*time.Second))
	wl, err := w.Write().TryAcquire(ctx)
	if err != nil {
		t.Fatalf("writer after every reader left: %v", err)
	}
	// A read under the write lease is a downgrade, allowed; a write under a
	// read lease alone is an upgrade, refused at once.
	rl := acquire(t, wl.Context(), w.Read())
	release(t, wl)
	_, err = w.Write().Acquire(rl.Context())
	wantErr(t, err, rw.ErrUpgrade)
	release(t, rl)
}

// A semaphore bounds its holders across Clients; a release wakes a
// waiter; Weighted takes several permits at once; AddPermits wakes the
// waiters it makes room for.
func testSemaphore(t *testing.T, suite Suite) {
	srv := suite.NewServer(t)
	ctx := ctxTimeout(t, 30*time.Second)
	s1, s2 := semaphore.New(srv.Open(), "pool"), semaphore.New(srv.Open(), "pool")
	if ok, err := s1.TrySetPermits(ctx, 3); !ok || err != nil {
		t.Fatalf("TrySetPermits = %v, %v", ok, err)
	}
	if ok, err := s2.TrySetPermits(ctx, 9); ok || err != nil {
		t.Fatalf("second TrySetPermits = %v, %v; want false: set already", ok, err)
	}
	one := acquire(t, ctx, s1)
	two := acquire(t, ctx, s2.Weighted(2))
	if n, err := s1.AvailablePermits(ctx); n != 0 || err != nil {
		t.Fatalf("AvailablePermits = %d, %v; want 0", n, err)
	}
	_, err := s2.TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	f := s2.AcquireAsync(ctx)
	time.Sleep(50 * time.Millisecond)
	pending(t, f, "a fourth permit out of three")
	release(t, two)
	third := result(t, f, 5*time.Second)
	if third.Token() != 0 {
		t.Fatalf("a permit's token %d, want 0", third.Token())
	}
	fw := s1.Weighted(3).AcquireAsync(ctx)
	time.Sleep(50 * time.Millisecond)
	pending(t, fw, "three permits while two are held")
	if err := s2.AddPermits(ctx, 2); err != nil { // 5 permits, 2 held
		t.Fatal(err)
	}
	release(t, result(t, fw, 5*time.Second))
	release(t, one)
	release(t, third)
	if n, err := s1.AvailablePermits(ctx); n != 5 || err != nil {
		t.Fatalf("AvailablePermits = %d, %v after every release; want 5", n, err)
	}
}

// A permit held on a fixed lease comes back when the lease runs out.
func testSemaphorePermitExpires(t *testing.T, suite Suite) {
	srv := suite.NewServer(t)
	ctx := ctxTimeout(t, 30*time.Second)
	s := semaphore.New(srv.Open(), "lapse", leasehold.WithLeaseTime(400*time.Millisecond))
	if _, err := s.TrySetPermits(ctx, 1); err != nil {
		t.Fatal(err)
	}
	taken := time.Now()
	held := acquire(t, ctx, s)
	ls := acquire(t, ctx, semaphore.New(srv.Open(), "lapse"))
	if el := time.Since(taken); el < 400*time.Millisecond {
		t.Fatalf("second permit of one taken %v in, before the first's lease ran out", el)
	}
	<-held.Lost()
	release(t, ls)
}

// One candidate leads at a time, each term's token above the last;
// Leader and Observe report it, Proclaim changes its value, and a
// resignation hands the leadership on at once (the lease is a minute).
func testElection(t *testing.T, suite Suite) {
	srv := suite.NewServer(t)
	ctx := ctxTimeout(t, 30*time.Second)
	a := election.New(srv.Open(), "sched", leasehold.WithLeaseTime(time.Minute))
	bc := srv.Open()
	b := election.New(bc, "sched")
	watch := election.New(srv.Open(), "sched")
	if _, err := watch.Leader(ctx); err == nil {
		t.Fatal("Leader before any campaign: no error")
	} else {
		wantErr(t, err, election.ErrNoLeader)
	}
	obs := watch.Observe(ctx)
	la, err := a.Campaign(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	next := func(want election.Leader) {
		t.Helper()
		for {
			select {
			case got, ok := <-obs:
				if !ok {
					t.Fatal("Observe's channel closed")
				}
				if got == want {
					return
				}
				if got.Token > want.Token {
					t.Fatalf("Observe reported %+v past %+v", got, want)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("Observe did not report %+v within 5s", want)
			}
		}
	}
	next(election.Leader{Value: "a1", Token: la.Token(), Owner: la.Owner()})
	if err := a.Proclaim(ctx, "a2"); err != nil {
		t.Fatal(err)
	}
	next(election.Leader{Value: "a2", Token: la.Token(), Owner: la.Owner()})
	wantErr(t, b.Proclaim(ctx, "b0"), lease.ErrNotHeld)

	type won struct {
		ls  *lease.Lease
		err error
	}
	ch := make(chan won, 1)
	go func() {
		ls, err := b.Campaign(ctx, "b1")
		ch <- won{ls, err}
	}()
	eventually(t, 5*time.Second, "campaigner waiting", func() bool { return bc.Stats().Waiters == 1 })
	release(t, la) // resign
	var lb *lease.Lease
	select {
	case w := <-ch:
		if w.err != nil {
			t.Fatal(w.err)
		}
		lb = w.ls
	case <-time.After(5 * time.Second):
		t.Fatal("no new leader within 5s of a resignation (lease 1m)")
	}
	if lb.Token() <= la.Token() {
		t.Fatalf("term %d after %d", lb.Token(), la.Token())
	}
	next(election.Leader{Value: "b1", Token: lb.Token(), Owner: lb.Owner()})
	got, err := watch.Leader(ctx)
	if want := (election.Leader{Value: "b1", Token: lb.Token(), Owner: lb.Owner()}); got != want || err != nil {
		t.Fatalf("Leader = %+v, %v; want %+v", got, err, want)
	}
	release(t, lb)
}

// A fair waiter keeps its place however long the lock is held (its
// Client's keeper refreshes it every third of the queue timeout), and one
// whose place is taken away joins again at the tail. The keeper's script
// reports a lost place as the string "1", which gopher-lua's table.concat
// would return as a number (see compat.go).
func testFairWaiterKeepsItsPlace(t *testing.T, suite Suite) {
	srv := suite.NewServer(t)
	ctx := ctxTimeout(t, 30*time.Second)
	rc := srv.Raw(t)
	held := acquire(t, ctx, fairqueue.New(srv.Open(), "patient"))
	const qt = 300 * time.Millisecond
	f := fairqueue.New(srv.Open(), "patient", leasehold.WithQueueTimeout(qt)).AcquireAsync(ctx)
	eventually(t, 5*time.Second, "waiter queued", func() bool { return queueLen(t, rc, "patient") == 1 })
	time.Sleep(4 * qt)
	if n := queueLen(t, rc, "patient"); n != 1 {
		t.Fatalf("%d waiters in the queue after four queue timeouts, want the one kept", n)
	}
	k := script.KeysOf("patient")
	if err := rc.Do(ctx, rc.B().Del().Key(k.FairQueue, k.FairTimeout).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	// Within a refresh (qt/3), plus 2s for a loaded machine.
	eventually(t, qt/3+2*time.Second, "the removed waiter back in the queue", func() bool {
		return queueLen(t, rc, "patient") == 1
	})
	release(t, held)
	release(t, result(t, f, 5*time.Second))
}

// A leader whose fixed lease runs out, unreleased, is reported gone by
// Observe (which reads the leader again when its lease would end), and the
// next campaigner leads.
func testLeaderLeaseRunsOut(t *testing.T, suite Suite) {
	srv := suite.NewServer(t)
	ctx := ctxTimeout(t, 30*time.Second)
	obs := election.New(srv.Open(), "lapse").Observe(ctx)
	la, err := election.New(srv.Open(), "lapse", leasehold.WithLeaseTime(300*time.Millisecond)).Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	lb, err := election.New(srv.Open(), "lapse").Campaign(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if lb.Token() <= la.Token() {
		t.Fatalf("term %d after %d", lb.Token(), la.Token())
	}
	for want := (election.Leader{Value: "b", Token: lb.Token(), Owner: lb.Owner()}); ; {
		select {
		case got := <-obs:
			if got == want {
				release(t, lb)
				return
			}
			if got.Token > want.Token {
				t.Fatalf("Observe reported %+v past %+v", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Observe did not report %+v within 5s", want)
		}
	}
}

// The leases of one hold fence as one holder, in every reentrant kind: a
// re-entry's lease has its outer lease's token, so the resource accepts the
// outer lease's write after the inner one's (package fence, in memory and
// in Redis), and the next holder's token, above it, fences them all out.
func testReentryFencesAsOneHolder(t *testing.T, suite Suite) {
	srv := suite.NewServer(t)
	c, other := srv.Open(), srv.Open()
	ctx := ctxTimeout(t, 30*time.Second)
	redisFence := fence.NewRedis(srv.Raw(t))
	type take func(ctx context.Context, name string) (*lease.Lease, error)
	locker := func(l func(string) lease.Locker) take {
		return func(ctx context.Context, n string) (*lease.Lease, error) { return l(n).Acquire(ctx) }
	}
	campaign := func(c *leasehold.Client) take {
		return func(ctx context.Context, n string) (*lease.Lease, error) {
			return election.New(c, n).Campaign(ctx, "v")
		}
	}
	for _, k := range []struct {
		name       string
		mine, next take
	}{
		{"rlock", locker(func(n string) lease.Locker { return rlock.New(c, n) }),
			locker(func(n string) lease.Locker { return rlock.New(other, n) })},
		{"fairqueue", locker(func(n string) lease.Locker { return fairqueue.New(c, n) }),
			locker(func(n string) lease.Locker { return fairqueue.New(other, n) })},
		{"rw read", locker(func(n string) lease.Locker { return rw.New(c, n).Read() }),
			locker(func(n string) lease.Locker { return rw.New(other, n).Write() })},
		{"rw write", locker(func(n string) lease.Locker { return rw.New(c, n).Write() }),
			locker(func(n string) lease.Locker { return rw.New(other, n).Write() })},
		{"election", campaign(c), campaign(other)},
	} {
		t.Run(k.name, func(t *testing.T) {
			name := "fenced-" + k.name
			held := func(ctx context.Context, tk take) *lease.Lease {
				t.Helper()
				ls, err := tk(ctx, name)
				if err != nil {
					t.Fatal(err)
				}
				return ls
			}
			var gate fence.Gate
			outer := held(ctx, k.mine)
			inner := held(outer.Context(), k.mine)
			if inner.Token() != outer.Token() {
				t.Fatalf("re-entry's token %d, outer lease's %d: want one holder's", inner.Token(), outer.Token())
			}
			for _, ls := range []*lease.Lease{inner, outer} {
				if err := gate.Admit(name, ls.Token()); err != nil {
					t.Fatalf("the gate refuses a lease of the hold: %v", err)
				}
				if err := redisFence.Set(ctx, name+":value", "v", ls.Token()); err != nil {
					t.Fatalf("Redis refuses a lease of the hold: %v", err)
				}
			}
			release(t, inner)
			release(t, outer)
			next := held(ctx, k.next)
			defer release(t, next)
			if next.Token() <= outer.Token() {
				t.Fatalf("next holder's token %d not above the hold's %d", next.Token(), outer.Token())
			}
			if err := gate.Admit(name, next.Token()); err != nil {
				t.Fatal(err)
			}
			if err := redisFence.Set(ctx, name+":value", "next", next.Token()); err != nil {
				t.Fatal(err)
			}
			wantErr(t, gate.Admit(name, outer.Token()), fence.ErrStale)
			wantErr(t, redisFence.Set(ctx, name+":value", "late", outer.Token()), fence.ErrStale)
		})
	}
}
