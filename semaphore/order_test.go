package semaphore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/script"
	"github.com/leasehold/leasehold/semaphore"
)

// claims is how many waiters claim their place for several permits.
func claims(t *testing.T, srv *redistest.Server, name string) int64 {
	t.Helper()
	n, err := srv.Do("ZCARD", script.KeysOf(name).SemaphoreClaims).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Larger requests first: while a waiter for 2 permits waits, a taker of 1
// stands back even though a permit is free (taking it would leave too few
// for the waiter). When permits come back the waiter for 2 gets in first;
// then its claim is gone and the smaller takers go.
func TestLargerRequestsFirst(t *testing.T) {
	srv := redistest.Start(t)
	a, b, c := open(t, srv), open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	s := newSet(t, a, "larger", 5)
	first := mustAcquire(t, s.Weighted(3), ctx) // 2 left
	blocker := mustAcquire(t, s, ctx)           // 1 left
	f := semaphore.New(b, "larger").Weighted(2).AcquireAsync(ctx)
	eventually(t, 5*time.Second, "the waiter for 2 claims its place", func() bool { return claims(t, srv, "larger") == 1 })

	_, err := semaphore.New(c, "larger").TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired) // 1 free, but the waiter for 2 needs it
	if n := count(t, srv, "larger"); n != 1 {
		t.Fatalf("%d available, want the 1 left untouched", n)
	}
	g := semaphore.New(c, "larger").AcquireAsync(ctx)
	eventually(t, 5*time.Second, "the taker of 1 waits", func() bool { return waiters(c) == 1 })

	release(t, blocker) // 2 free: the waiter for 2 first
	w := result(t, f, 5*time.Second)
	if claims(t, srv, "larger") != 0 {
		t.Fatal("the claim stayed after its waiter got in")
	}
	if isDone(g) {
		t.Fatal("the taker of 1 got in alongside: 5 permits, 3 + 2 held")
	}
	release(t, first)
	release(t, result(t, g, 5*time.Second))
	release(t, w)
}

// A waiter for all 4 permits is not starved by a stream of single-permit
// takers that keep the semaphore busy (6 takers on two Clients for 4
// permits, each coming straight back): its claim holds new single takers
// back, the ones inside drain, and it gets in; then the stream resumes.
// Without the claim, permits would never be free 4 at once.
func TestWeightedNotStarvedByStream(t *testing.T) {
	srv := redistest.Start(t)
	cs := []*leasehold.Client{open(t, srv), open(t, srv)}
	wc := open(t, srv)
	newSet(t, cs[0], "stream", 4)
	stream, stop := context.WithCancel(context.Background())
	defer stop()
	takers := make([]lease.Locker, 6)
	for i := range takers {
		takers[i] = semaphore.New(cs[i%len(cs)], "stream")
	}
	wait := locktest.Stream(t, stream, takers, 100*time.Millisecond, 0)
	eventually(t, 5*time.Second, "the stream holds every permit", func() bool { return taken(t, srv, "stream") == 4 })
	start := time.Now()
	// The takers inside need at most a hold each to drain once the claim
	// stands; 10s leaves ample room on loaded cores.
	wl, err := semaphore.New(wc, "stream").Weighted(4).Acquire(ctxTimeout(t, 10*time.Second))
	if err != nil {
		t.Fatalf("the waiter for 4 was starved by the stream: %v", err)
	}
	t.Logf("the waiter for 4 got in after %v", time.Since(start))
	if n := taken(t, srv, "stream"); n != 4 {
		t.Fatalf("%d permits taken while the waiter for 4 holds, want its 4 alone", n)
	}
	release(t, wl)
	eventually(t, 5*time.Second, "the stream resumes", func() bool { return taken(t, srv, "stream") >= 1 })
	stop()
	wait()
}

// A claim left by a waiter whose process died holds smaller takers back for
// a bounded time only: until its expiry (here 400ms ahead), when the held
// back taker's timer, set by its failed attempt, lets it in. Its lease is
// 30s: nothing else would wake it.
func TestDeadWaitersClaimExpires(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	s := newSet(t, c, "dead-claim", 2)
	expiry := time.Now().Add(400 * time.Millisecond)
	srv.Do("ZADD", script.KeysOf("dead-claim").SemaphoreClaims, strconv.FormatInt(expiry.UnixMilli(), 10), "gone:1:2")
	_, err := s.TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired) // 2 free, but the claim for 2 stands
	ls := mustAcquire(t, s, ctx)
	if late := time.Since(expiry); late < -50*time.Millisecond || late > 2*time.Second {
		t.Fatalf("got in %v after the dead waiter's claim expired", late)
	}
	release(t, ls)
}

// A waiter for several permits that gives up withdraws its claim at once
// and wakes the smaller takers it held back, rather than leaving them
// behind the claim until it expires (its next attempt plus 5s).
func TestGivingUpWithdrawsClaim(t *testing.T) {
	srv := redistest.Start(t)
	a, b, c := open(t, srv), open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	s := newSet(t, a, "giveup", 3)
	held := mustAcquire(t, s.Weighted(2), ctx) // 1 left
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := semaphore.New(b, "giveup").Weighted(3).AcquireAsync(wctx)
	eventually(t, 5*time.Second, "claimed", func() bool { return claims(t, srv, "giveup") == 1 })
	g := semaphore.New(c, "giveup").AcquireAsync(ctx)
	eventually(t, 5*time.Second, "the taker of 1 held back", func() bool { return waiters(c) == 1 })
	gaveUp := time.Now()
	f.Cancel()
	_, err := f.Result()
	wantErr(t, err, context.Canceled)
	release(t, result(t, g, 3*time.Second))
	t.Logf("the held-back taker got in %v after the waiter for 3 gave up", time.Since(gaveUp))
	if n := claims(t, srv, "giveup"); n != 0 {
		t.Fatalf("%d claims after the waiter gave up", n)
	}
	release(t, held)
}

// TryAcquire does not wait, so a failed one claims nothing: nobody would
// withdraw it.
func TestTryAcquireClaimsNothing(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	s := newSet(t, c, "try", 2)
	held := mustAcquire(t, s, ctx)
	_, err := s.Weighted(2).TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	if n := claims(t, srv, "try"); n != 0 {
		t.Fatalf("a failed TryAcquire left %d claims", n)
	}
	release(t, mustAcquire(t, s, ctx))
	release(t, held)
}
