package fairqueue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
)

// The Lease is rlock's: reentrancy through the context, a fencing token that
// rises, a context cancelled on release, ErrNotHeld on a second release.
func TestReentrancy(t *testing.T) {
	srv := redistest.Start(t)
	c, other := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	l := fairqueue.New(c, "reentrant")

	outer := mustAcquire(t, l, ctx)
	// A waiter from another Client queues; re-entry must not queue behind it.
	waiting := goAcquire(fairqueue.New(other, "reentrant"), ctx)
	queued(t, srv, "reentrant", 1)
	inner, err := fairqueue.New(c, "reentrant").Acquire(outer.Context())
	if err != nil {
		t.Fatalf("reentrant Acquire with a waiter queued: %v", err)
	}
	if inner.HoldCount() != 2 || outer.HoldCount() != 2 {
		t.Fatalf("HoldCount = %d, %d; want 2", inner.HoldCount(), outer.HoldCount())
	}
	if inner.Token() != outer.Token() {
		t.Fatalf("reentrant token %d, want the outer lease's %d: one hold, one holder", inner.Token(), outer.Token())
	}
	if n, err := l.HoldCount(inner.Context()); err != nil || n != 2 {
		t.Fatalf("HoldCount = %d, %v; want 2", n, err)
	}
	tried, err := fairqueue.New(c, "reentrant").TryAcquire(outer.Context())
	if err != nil {
		t.Fatalf("reentrant TryAcquire: %v", err)
	}
	release(t, tried)
	if q := queue(t, srv, "reentrant"); len(q) != 1 {
		t.Fatalf("queue after re-entry: %v, want the one waiter", q)
	}

	release(t, inner)
	if inner.Context().Err() == nil {
		t.Fatal("released lease's context not cancelled")
	}
	if outer.Context().Err() != nil || isLost(outer) {
		t.Fatal("releasing the inner lease ended the outer one")
	}
	select {
	case <-waiting:
		t.Fatal("waiter got the lock while the outer lease holds it")
	default:
	}
	release(t, outer)
	got := await(t, waiting, 5*time.Second, "waiter after the full release")
	if got.Token() <= inner.Token() {
		t.Fatalf("waiter's token %d not above %d", got.Token(), inner.Token())
	}
	release(t, got)
	wantErr(t, outer.Release(ctx), lease.ErrNotHeld)
}

func TestWatchdogKeepsLease(t *testing.T) {
	srv := redistest.Start(t)
	// 1s, renewed every 333ms: a race build on a busy machine stalled a
	// 300ms watchdog's renewals past its lease.
	const watchdog = time.Second
	c, other := open(t, srv, leasehold.WithWatchdog(watchdog)), open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	l := fairqueue.New(c, "watched")
	ls := mustAcquire(t, l, ctx)
	rounds := c.Stats().RenewalRounds
	// Three leases long: the lock would have expired twice over unrenewed.
	time.Sleep(3 * watchdog)
	if isLost(ls) {
		t.Fatalf("watchdog lease lost: %v", ls.Err())
	}
	if c.Stats().RenewalRounds-rounds < 3 {
		t.Fatalf("%d renewal rounds in 3 watchdog periods", c.Stats().RenewalRounds-rounds)
	}
	if ttl, err := l.RemainTTL(ctx); err != nil || ttl <= 0 || ttl > watchdog {
		t.Fatalf("RemainTTL = %v, %v; want in (0, %v]", ttl, err, watchdog)
	}
	_, err := fairqueue.New(other, "watched").TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	release(t, ls)
}

func TestFixedLeaseExpires(t *testing.T) {
	srv := redistest.Start(t)
	c, other := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	start := time.Now()
	ls := mustAcquire(t, fairqueue.New(c, "fixed", leasehold.WithLeaseTime(300*time.Millisecond)), ctx)
	select {
	case <-ls.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("fixed lease never reported lost")
	}
	// The holder hears at its lease's end as it reckons it: counted from
	// when the acquisition was sent, less the drift margin, so within
	// 300ms of start and never before that deadline. 1s covers a timer
	// late on a machine busy with other tests; without the timer the loss
	// would be heard at the next read of the key, if ever.
	lost, deadline := time.Now(), ls.Deadline()
	if deadline.Sub(start) > 300*time.Millisecond {
		t.Errorf("a 300ms lease's deadline %v after its acquisition began", deadline.Sub(start))
	}
	if late := lost.Sub(deadline); late < 0 || late > time.Second {
		t.Errorf("Lost %v after the lease's deadline", late)
	}
	wantErr(t, ls.Err(), lease.ErrLost)
	if !errors.Is(context.Cause(ls.Context()), lease.ErrLost) {
		t.Fatalf("context cause %v", context.Cause(ls.Context()))
	}
	got := mustAcquire(t, fairqueue.New(other, "fixed"), ctx)
	release(t, got)
	wantErr(t, ls.Release(ctx), lease.ErrNotHeld)
}

// Many goroutines over several Clients: never two holders at once, and every
// holder's fencing token is above the one before.
func TestMutualExclusion(t *testing.T) {
	srv := redistest.Start(t)
	const clients, workers, rounds = 3, 6, 15
	var inside atomic.Int32
	var mu sync.Mutex
	var last uint64
	var wg sync.WaitGroup
	errs := make(chan error, clients*workers*rounds)
	for i := 0; i < clients; i++ {
		c := open(t, srv)
		for j := 0; j < workers; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l := fairqueue.New(c, "mutex")
				for r := 0; r < rounds; r++ {
					ls, err := l.Acquire(ctxTimeout(t, 30*time.Second))
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
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if q := queue(t, srv, "mutex"); len(q) != 0 {
		t.Fatalf("queue left behind: %v", q)
	}
}

func TestAcquireAsync(t *testing.T) {
	srv := redistest.Start(t)
	c, other := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)

	t.Run("cancel while queued leaves no place", func(t *testing.T) {
		held := mustAcquire(t, fairqueue.New(c, "async-busy"), ctx)
		f := fairqueue.New(other, "async-busy").AcquireAsync(ctx)
		queued(t, srv, "async-busy", 1)
		f.Cancel()
		_, err := f.Result()
		wantErr(t, err, context.Canceled)
		queued(t, srv, "async-busy", 0)
		release(t, held)
		if n, _ := srv.Do("EXISTS", "async-busy").AsInt64(); n != 0 {
			t.Fatal("lock held after the cancelled future and the release")
		}
	})

	t.Run("waiter gets the lock on release", func(t *testing.T) {
		held := mustAcquire(t, fairqueue.New(c, "async-handoff"), ctx)
		f := fairqueue.New(other, "async-handoff").AcquireAsync(ctx)
		queued(t, srv, "async-handoff", 1)
		release(t, held)
		ls, err := f.Result()
		if err != nil {
			t.Fatal(err)
		}
		release(t, ls)
	})
}

func TestBadInput(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	closed := open(t, srv)
	closed.Close()
	ctx := ctxTimeout(t, 5*time.Second)
	tests := []struct {
		name string
		lock *fairqueue.Lock
		want error
	}{
		{"empty name", fairqueue.New(c, ""), lease.ErrInvalid},
		{"zero lease time", fairqueue.New(c, "x", leasehold.WithLeaseTime(0)), lease.ErrInvalid},
		{"zero queue timeout", fairqueue.New(c, "x", leasehold.WithQueueTimeout(0)), lease.ErrInvalid},
		{"negative queue timeout", fairqueue.New(c, "x", leasehold.WithQueueTimeout(-time.Second)), lease.ErrInvalid},
		{"nil client", fairqueue.New(nil, "x"), lease.ErrInvalid},
		{"closed client", fairqueue.New(closed, "x"), lease.ErrClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.lock.Acquire(ctx)
			wantErr(t, err, tt.want)
			_, err = tt.lock.TryAcquire(ctx)
			wantErr(t, err, tt.want)
			_, err = tt.lock.AcquireAsync(ctx).Result()
			wantErr(t, err, tt.want)
			_, err = tt.lock.IsLocked(ctx)
			wantErr(t, err, tt.want)
			_, err = tt.lock.RemainTTL(ctx)
			wantErr(t, err, tt.want)
			_, err = tt.lock.ForceRelease(ctx)
			wantErr(t, err, tt.want)
		})
	}
	_, err := fairqueue.New(c, "named", leasehold.WithQueueTimeout(-1)).Acquire(ctx)
	if err == nil || !strings.Contains(err.Error(), "named") {
		t.Fatalf("error %v does not name the lock", err)
	}
}

func TestInspection(t *testing.T) {
	srv := redistest.Start(t)
	c, other := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	l := fairqueue.New(c, "inspected")
	if ok, err := l.IsLocked(ctx); err != nil || ok {
		t.Fatalf("IsLocked on a free lock = %v, %v", ok, err)
	}
	if ttl, err := l.RemainTTL(ctx); err != nil || ttl != 0 {
		t.Fatalf("RemainTTL on a free lock = %v, %v", ttl, err)
	}
	ls := mustAcquire(t, fairqueue.New(other, "inspected"), ctx)
	eventually(t, 2*time.Second, "IsLocked true", func() bool {
		ok, err := l.IsLocked(ctx)
		return err == nil && ok
	})
	if ttl, err := l.RemainTTL(ctx); err != nil || ttl <= 0 {
		t.Fatalf("RemainTTL on a held lock = %v, %v", ttl, err)
	}
	// ForceRelease tells the head of the queue: a 30s lease, yet the waiter
	// holds the lock at once.
	waiting := goAcquire(fairqueue.New(c, "inspected"), ctx)
	queued(t, srv, "inspected", 1)
	freed, err := l.ForceRelease(ctx)
	if err != nil || !freed {
		t.Fatalf("ForceRelease = %v, %v", freed, err)
	}
	got := await(t, waiting, 2*time.Second, "waiter after ForceRelease")
	// The holder hears of it at once (an invalidation of the lock key,
	// confirmed by a read), not at its next renewal 10s away; a re-entry
	// under its context then fails and leaves no place in the queue.
	select {
	case <-ls.Lost():
	case <-time.After(2 * time.Second):
		t.Fatal("the holder did not hear of the force release")
	}
	_, err = fairqueue.New(other, "inspected").Acquire(ls.Context())
	if err == nil || !errors.Is(context.Cause(ls.Context()), lease.ErrLost) {
		t.Fatalf("re-entry under a lost lease: %v (cause %v), want an error and ErrLost", err, context.Cause(ls.Context()))
	}
	if q := queue(t, srv, "inspected"); len(q) != 0 {
		t.Fatalf("a failed re-entry queued: %v", q)
	}
	wantErr(t, ls.Release(ctx), lease.ErrNotHeld)
	wantErr(t, ls.Err(), lease.ErrLost)
	release(t, got)
	if freed, _ := l.ForceRelease(ctx); freed {
		t.Fatal("ForceRelease of a free lock reported a lock")
	}
}
