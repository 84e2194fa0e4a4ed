package quorum_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/quorum"
	"github.com/leasehold/leasehold/rlock"
)

// watchdog is the members' lease in the fault tests: short, so that dead
// nodes are noticed fast, long enough for a loaded machine to renew in time.
const watchdog = 600 * time.Millisecond

// Five servers: the RedLock keeps working with two killed (kill -9), fails
// with a clear error in bounded time with three killed, and recovers when
// they return.
func TestRedLockKilledNodes(t *testing.T) {
	srvs, cs := cluster(t, 5, leasehold.WithWatchdog(watchdog))
	others := clients(t, srvs, leasehold.WithWatchdog(watchdog))
	cfg := quorum.Config{NodeTimeout: 150 * time.Millisecond}
	rl := quorum.RedLockWith(cfg, members(cs, "svc")...)
	rival := quorum.RedLockWith(cfg, members(others, "svc")...)
	ctx := ctxTimeout(t, 60*time.Second)

	ls := mustAcquire(t, rl, ctx)
	srvs[0].Kill()
	srvs[1].Kill()
	// The lease lives on, its three live members renewed: wait six renewal
	// rounds (two leases' worth) on a live node.
	rounds := cs[4].Stats().RenewalRounds
	eventually(t, 10*time.Second, "renewals after the kills", func() bool { return cs[4].Stats().RenewalRounds >= rounds+6 })
	if isLost(ls) {
		t.Fatalf("lease lost with 3 of 5 nodes alive: %v", ls.Err())
	}
	_, err := rival.TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	release(t, ls)
	ls = mustAcquire(t, rival, ctx)
	release(t, ls)

	srvs[2].Kill()
	start := time.Now()
	_, err = rl.TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	wantMsg(t, err, "2 of 5 members held, 3 needed")
	// One attempt: NodeTimeout per node, all at once, plus the releases of
	// the two it got; 2s leaves room for a loaded machine.
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("TryAcquire took %v with 3 of 5 nodes dead", el)
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	start = time.Now()
	_, err = rl.Acquire(short)
	wantErr(t, err, context.DeadlineExceeded)
	wantErr(t, err, lease.ErrNotAcquired) // the last attempt's reason
	wantMsg(t, err, "3 needed")
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("Acquire with a 1s ctx took %v", el)
	}
	// A member's attempt that its NodeTimeout cut short may have taken its
	// lock: the member's engine gives it back in the background (a loaded
	// machine makes that likely), so the live nodes are free soon, not at
	// once: within half the 600ms lease, before a lock left behind would
	// have run out by itself.
	for _, s := range srvs[3:] {
		eventually(t, watchdog/2, "failed attempts leave no live node locked", func() bool { return !exists(t, s, "svc") })
	}

	for _, s := range srvs[:3] {
		s.Restart()
	}
	ls = mustAcquire(t, rl, ctxTimeout(t, 20*time.Second))
	release(t, ls)
}

// A holder whose renewals can no longer reach a majority sees Lost close
// before its validity runs out, and the members it still holds are released.
func TestRedLockLostWithoutMajority(t *testing.T) {
	srvs, cs := cluster(t, 5, leasehold.WithWatchdog(watchdog))
	ls := mustAcquire(t, quorum.RedLock(members(cs, "doomed")...), ctxTimeout(t, 10*time.Second))
	killed := time.Now()
	for _, s := range srvs[:3] {
		s.Kill()
	}
	select {
	case <-ls.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("lease not lost with 3 of 5 nodes dead")
	}
	// The validity ends at most a lease after the kill (the last renewal
	// the dead nodes confirmed was sent before it), less the members' drift
	// (14ms) and the quorum's (8ms); 100ms more covers a late timer on a
	// loaded machine.
	if el := time.Since(killed); el > watchdog+100*time.Millisecond {
		t.Errorf("Lost %v after the kill, lease %v", el, watchdog)
	}
	wantErr(t, ls.Err(), lease.ErrLost)
	eventually(t, 5*time.Second, "the live members released", func() bool {
		return !exists(t, srvs[3], "doomed") && !exists(t, srvs[4], "doomed")
	})
	wantErr(t, ls.Release(context.Background()), lease.ErrNotHeld)
}

// The case: nodes A=5, B=1, C=1 (counted from a base an hour ahead
// of the clock, so tokens are counter + 1). A holder on A and B gets 6; a
// later holder on B and C would get 2 from the maximum of its own majority,
// since B and C never saw 6. The write-back raised B to 6, so it gets 7.
func TestRedLockFencingDivergentCounters(t *testing.T) {
	srvs, cs := cluster(t, 3)
	ctx := ctxTimeout(t, 10*time.Second)
	for i, v := range []string{at(5), at(1), at(1)} {
		setCounter(t, srvs[i], "fenced", v)
	}
	rl := quorum.RedLock(members(cs, "fenced")...)

	block(t, srvs[2], "fenced")
	first, err := rl.TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if first.Token() != ahead+6 {
		t.Fatalf("first token %d, want base+6", first.Token()-ahead)
	}
	release(t, first)
	unblock(t, srvs[2], "fenced")
	if got := counter(t, srvs[1], "fenced"); got != ahead+6 {
		t.Fatalf("B's counter base+%d, want base+6 written back", got-ahead)
	}

	block(t, srvs[0], "fenced")
	second, err := rl.TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if second.Token() != ahead+7 {
		t.Fatalf("second token base+%d on B and C, want base+7 (B's 6 + 1), not base+2", second.Token()-ahead)
	}
	release(t, second)
	for _, s := range srvs[1:] {
		if got := counter(t, s, "fenced"); got != ahead+7 {
			t.Fatalf("counter base+%d after the second holder, want base+7", got-ahead)
		}
	}
}

// Counters far apart on five nodes, and each holder winning a different
// random majority: tokens strictly increase, and after each acquisition a
// majority of counters is at least the token handed out.
func TestRedLockFencingRandomMajorities(t *testing.T) {
	srvs, cs := cluster(t, 5)
	ctx := ctxTimeout(t, 30*time.Second)
	for i, v := range []string{"1000000", "3", "", "70000", "12"} {
		if v != "" {
			setCounter(t, srvs[i], "far", v)
		}
	}
	rl := quorum.RedLock(members(cs, "far")...)
	rng := rand.New(rand.NewPCG(1, 2)) // fixed: a failure replays
	var last uint64
	for round := range 30 {
		blocked := rng.Perm(5)[:2]
		for _, i := range blocked {
			block(t, srvs[i], "far")
		}
		ls, err := rl.TryAcquire(ctx)
		if err != nil {
			t.Fatalf("round %d (nodes %v blocked): %v", round, blocked, err)
		}
		if ls.Token() <= last {
			t.Fatalf("round %d: token %d after %d", round, ls.Token(), last)
		}
		last = ls.Token()
		atLeast := 0
		for _, s := range srvs {
			if counter(t, s, "far") >= last {
				atLeast++
			}
		}
		if atLeast < 3 {
			t.Fatalf("round %d: %d counters at least token %d, want a majority", round, atLeast, last)
		}
		release(t, ls)
		for _, i := range blocked {
			unblock(t, srvs[i], "far")
		}
	}
}

// An attempt that fails releases every member it took, including one whose
// reply was lost: the lock's own cleanup undoes that one.
func TestFailedAttemptReleasesMembers(t *testing.T) {
	srvs := []*redistest.Server{redistest.Start(t), redistest.Start(t), redistest.Start(t)}
	proxy := redistest.NewProxy(t, srvs[2].Addr())
	opt := srvs[2].Option()
	opt.InitAddress = []string{proxy.Addr()}
	cs := []*leasehold.Client{open(t, srvs[0]), open(t, srvs[1]), openAt(t, opt)}
	ctx := ctxTimeout(t, 20*time.Second)
	rl := quorum.RedLock(members(cs, "undone")...)
	// Load the scripts first, so that the dropped reply is the acquire's.
	release(t, mustAcquire(t, rl, ctx))
	block(t, srvs[0], "undone")
	block(t, srvs[1], "undone")

	t.Run("no majority", func(t *testing.T) {
		_, err := rl.TryAcquire(ctx)
		wantErr(t, err, lease.ErrNotAcquired)
		wantMsg(t, err, "1 of 3 members held, 2 needed")
		if exists(t, srvs[2], "undone") {
			t.Fatal("the member the failed attempt took is still locked")
		}
	})

	t.Run("reply lost", func(t *testing.T) {
		before := counter(t, srvs[2], "undone")
		proxy.DropNextReply()
		_, err := rl.TryAcquire(ctx)
		wantErr(t, err, lease.ErrNotAcquired)
		if proxy.Dropped() != 1 {
			t.Fatalf("the proxy dropped %d replies, want the acquire's", proxy.Dropped())
		}
		if counter(t, srvs[2], "undone") <= before {
			t.Fatal("the acquire whose reply was lost did not run")
		}
		// The lease is the 30s watchdog's: only the cleanup frees it soon.
		eventually(t, 5*time.Second, "the member whose reply was lost released", func() bool {
			return !exists(t, srvs[2], "undone")
		})
	})
}

// The time an attempt spends counts against the lease: the same RedLock
// that acquires at once fails with its validity used up when a paused node
// makes it wait out NodeTimeout, and releases the members it got.
func TestValidityUsedUp(t *testing.T) {
	srvs, cs := cluster(t, 3)
	ctx := ctxTimeout(t, 20*time.Second)
	// A 3s fixed lease less 2.5s of drift margin leaves about 0.4s of
	// validity: plenty for a quick attempt, not for 800ms spent waiting.
	cfg := quorum.Config{NodeTimeout: 800 * time.Millisecond, DriftMargin: 2500 * time.Millisecond}
	rl := quorum.RedLockWith(cfg, members(cs, "valid", leasehold.WithLeaseTime(3*time.Second))...)
	release(t, mustAcquire(t, rl, ctx))

	srvs[2].Pause()
	start := time.Now()
	_, err := rl.TryAcquire(ctx)
	el := time.Since(start)
	// Released, not run out: well within the 3s lease.
	gone := !exists(t, srvs[0], "valid") && !exists(t, srvs[1], "valid")
	srvs[2].Resume()
	wantErr(t, err, lease.ErrNotAcquired)
	wantMsg(t, err, "validity used up")
	if el < cfg.NodeTimeout {
		t.Fatalf("attempt took %v, less than the paused node's timeout", el)
	}
	if !gone && time.Since(start) < 2*time.Second {
		t.Fatal("the members of an attempt out of validity were not released")
	}
	// The paused node ran the acquire when it resumed; the cleanup undid it.
	eventually(t, 2*time.Second, "the paused node's member released", func() bool {
		return !exists(t, srvs[2], "valid")
	})
}

// Reentrancy through the context: the quorum lease re-enters its RedLock
// (a higher token, written back), and a member lock taken under it re-enters
// that member instead of waiting for itself.
func TestReentrancy(t *testing.T) {
	srvs, cs := cluster(t, 3)
	others := clients(t, srvs)
	ctx := ctxTimeout(t, 10*time.Second)
	rl := quorum.RedLock(members(cs, "re")...)
	rival := quorum.RedLock(members(others, "re")...)

	outer := mustAcquire(t, rl, ctx)
	inner, err := rl.Acquire(outer.Context())
	if err != nil {
		t.Fatalf("reentrant Acquire: %v", err)
	}
	if outer.HoldCount() != 2 || inner.HoldCount() != 2 {
		t.Fatalf("HoldCount = %d, %d; want 2", outer.HoldCount(), inner.HoldCount())
	}
	if inner.Token() != outer.Token() {
		t.Fatalf("reentrant token %d, want the outer lease's %d: one hold, one holder", inner.Token(), outer.Token())
	}
	for i, c := range cs {
		m, err := rlock.New(c, "re").TryAcquire(inner.Context())
		if err != nil {
			t.Fatalf("member %d under the quorum lease: %v", i, err)
		}
		if m.HoldCount() != 2 {
			t.Fatalf("member %d HoldCount %d, want 2 (re-entered)", i, m.HoldCount())
		}
		release(t, m)
	}

	release(t, inner)
	if isLost(outer) || outer.Context().Err() != nil {
		t.Fatal("releasing the inner lease ended the outer one")
	}
	_, err = rival.TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	release(t, outer)
	for _, s := range srvs {
		if exists(t, s, "re") {
			t.Fatal("a node still locked after both releases")
		}
	}
	release(t, mustAcquire(t, rival, ctx))
}

func TestAcquireAsync(t *testing.T) {
	srvs, cs := cluster(t, 3)
	others := clients(t, srvs)
	ctx := ctxTimeout(t, 10*time.Second)
	rl := quorum.RedLock(members(cs, "async")...)

	t.Run("cancel after winning releases every node", func(t *testing.T) {
		f := rl.AcquireAsync(ctx)
		<-f.Done()
		f.Cancel()
		_, err := f.Result()
		wantErr(t, err, context.Canceled)
		for _, s := range srvs {
			if exists(t, s, "async") {
				t.Fatal("a cancelled future left a node locked")
			}
		}
	})

	t.Run("cancel while waiting holds nothing", func(t *testing.T) {
		held := mustAcquire(t, quorum.RedLock(members(others, "async")...), ctx)
		f := rl.AcquireAsync(ctx)
		select {
		case <-f.Done():
			t.Fatal("future done while a rival holds the lock")
		case <-time.After(100 * time.Millisecond):
		}
		f.Cancel()
		_, err := f.Result()
		wantErr(t, err, context.Canceled)
		release(t, held)
		for _, s := range srvs {
			if exists(t, s, "async") {
				t.Fatal("a node still locked after the cancel and the release")
			}
		}
	})
}

// Several processes, each with its own Clients on three servers, contend:
// never two holders at once, every token above the one before.
func TestRedLockMutualExclusion(t *testing.T) {
	srvs := []*redistest.Server{redistest.Start(t), redistest.Start(t), redistest.Start(t)}
	const procs, workers, rounds = 3, 3, 8
	ctx := ctxTimeout(t, 60*time.Second)
	var inside atomic.Int32
	var mu sync.Mutex
	var last uint64
	var wg sync.WaitGroup
	errs := make(chan error, procs*workers)
	for range procs {
		cs := clients(t, srvs)
		for range workers {
			wg.Go(func() {
				rl := quorum.RedLock(members(cs, "mutex")...)
				for range rounds {
					ls, err := rl.Acquire(ctx)
					if err != nil {
						errs <- err
						return
					}
					if n := inside.Add(1); n != 1 {
						errs <- fmt.Errorf("%d holders at once", n)
					}
					mu.Lock()
					if ls.Token() <= last {
						errs <- fmt.Errorf("token %d after %d", ls.Token(), last)
					}
					last = ls.Token()
					mu.Unlock()
					inside.Add(-1)
					if err := ls.Release(context.Background()); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
