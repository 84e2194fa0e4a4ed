package quorum_test

import (
	"context"
	"fmt"
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

// One member held elsewhere: the Multi is not held and leaves none of the
// others locked, whether it tries once or waits until its ctx ends. A waiting
// Multi takes every member once that one is released.
func TestMultiAllOrNothing(t *testing.T) {
	srv := redistest.Start(t)
	c, other := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	m := quorum.Multi(rlock.New(c, "order"), rlock.New(c, "stock"), rlock.New(c, "payment"))
	held := mustAcquire(t, rlock.New(other, "stock"), ctx)

	_, err := m.TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	wantMsg(t, err, "2 of 3 members held, 3 needed")
	if exists(t, srv, "order") || exists(t, srv, "payment") {
		t.Fatal("a failed TryAcquire left members half-locked")
	}

	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = m.Acquire(short)
	wantErr(t, err, context.DeadlineExceeded)
	if exists(t, srv, "order") || exists(t, srv, "payment") {
		t.Fatal("a failed Acquire left members half-locked")
	}

	// The waiting Multi waits on stock itself, holding nothing: the release
	// wakes it, not the 30s lease running out nor a polling loop.
	f := m.AcquireAsync(ctx)
	eventually(t, 5*time.Second, "Multi waiting on stock", func() bool { return c.Stats().Waiters == 1 })
	if exists(t, srv, "order") || exists(t, srv, "payment") {
		t.Fatal("a waiting Multi holds members")
	}
	released := time.Now()
	release(t, held)
	ls, err := f.Result()
	if err != nil {
		t.Fatalf("waiting Multi: %v", err)
	}
	if el := time.Since(released); el > 2*time.Second {
		t.Fatalf("Multi took %v after the release", el)
	}
	for _, k := range []string{"order", "stock", "payment"} {
		if !exists(t, srv, k) {
			t.Fatalf("Multi lease without %s locked", k)
		}
		_, err := rlock.New(other, k).TryAcquire(ctx)
		wantErr(t, err, lease.ErrNotAcquired)
	}
	release(t, ls)
	for _, k := range []string{"order", "stock", "payment"} {
		if exists(t, srv, k) {
			t.Fatalf("%s still locked after Release", k)
		}
	}
}

// Two kinds of Multi over the same locks in opposite orders, hammered from
// several Clients: taking members one by one in the given order would
// deadlock (each holding the first lock the other waits for). Here every
// round completes, never two holders at once, tokens rising.
func TestMultiNoDeadlock(t *testing.T) {
	srv := redistest.Start(t)
	names := []string{"d1", "d2", "d3"}
	const procs, workers, rounds = 2, 4, 12
	ctx := ctxTimeout(t, 60*time.Second)
	var inside atomic.Int32
	var mu sync.Mutex
	var last uint64
	var wg sync.WaitGroup
	errs := make(chan error, procs*workers)
	for p := range procs {
		c := open(t, srv)
		order := names
		if p%2 == 1 {
			order = []string{names[2], names[1], names[0]}
		}
		for range workers {
			wg.Go(func() {
				m := quorum.Multi(rlock.New(c, order[0]), rlock.New(c, order[1]), rlock.New(c, order[2]))
				for range rounds {
					ls, err := m.Acquire(ctx)
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
	for _, k := range names {
		if exists(t, srv, k) {
			t.Fatalf("%s locked after every round", k)
		}
	}
}

// A member lost (taken away by an operator) loses the Multi: Lost closes,
// and the members still held are released rather than left renewed.
func TestMultiLostWithMember(t *testing.T) {
	srv := redistest.Start(t)
	c, other := open(t, srv, leasehold.WithWatchdog(300*time.Millisecond)), open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	m := quorum.Multi(rlock.New(c, "la"), rlock.New(c, "lb"), rlock.New(c, "lc"))
	ls := mustAcquire(t, m, ctx)
	if freed, err := rlock.New(other, "lb").ForceRelease(ctx); err != nil || !freed {
		t.Fatalf("ForceRelease = %v, %v", freed, err)
	}
	select {
	case <-ls.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("Multi not lost after a member was taken away")
	}
	wantErr(t, ls.Err(), lease.ErrLost)
	if ls.Context().Err() == nil {
		t.Fatal("lost Multi's context not cancelled")
	}
	eventually(t, 5*time.Second, "the other members released", func() bool {
		return !exists(t, srv, "la") && !exists(t, srv, "lc")
	})
	wantErr(t, ls.Release(ctx), lease.ErrNotHeld)
}

// A Multi's token is the highest its members drew, written back to every
// member: it rises across Multi holders, and a later holder of one member
// alone draws a higher token still.
func TestMultiFencingToken(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	setCounter(t, srv, "ta", at(1000))
	setCounter(t, srv, "tb", at(3))
	m := quorum.Multi(rlock.New(c, "ta"), rlock.New(c, "tb"))

	first := mustAcquire(t, m, ctx)
	if first.Token() != ahead+1001 {
		t.Fatalf("Multi token base+%d, want base+1001 (the higher member's)", first.Token()-ahead)
	}
	release(t, first)
	if got := counter(t, srv, "tb"); got != ahead+1001 {
		t.Fatalf("tb's counter base+%d after the Multi, want base+1001 (written back)", got-ahead)
	}
	alone := mustAcquire(t, rlock.New(c, "tb"), ctx)
	if alone.Token() <= first.Token() {
		t.Fatalf("tb alone drew %d after the Multi's %d", alone.Token(), first.Token())
	}
	release(t, alone)
	second := mustAcquire(t, m, ctx)
	if second.Token() <= alone.Token() {
		t.Fatalf("Multi token %d after %d", second.Token(), alone.Token())
	}
	release(t, second)
}
