package conformance

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/quorum"
	"github.com/leasehold/leasehold/rlock"
)

// Multi takes all of its locks or none: with one member held elsewhere it
// holds nothing, and waits until that member is free.
func testMulti(t *testing.T, suite Suite) {
	srv := suite.NewServer(t)
	ctx := ctxTimeout(t, 30*time.Second)
	c, other := srv.Open(), srv.Open()
	both := quorum.Multi(rlock.New(c, "from"), rlock.New(c, "to"))
	held := acquire(t, ctx, rlock.New(other, "to"))
	_, err := both.TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	if locked, err := rlock.New(other, "from").IsLocked(ctx); locked || err != nil {
		t.Fatalf("member of a refused Multi still held: %v, %v", locked, err)
	}
	f := both.AcquireAsync(ctx)
	time.Sleep(50 * time.Millisecond)
	pending(t, f, "Multi while a member is held")
	release(t, held)
	ls := result(t, f, 5*time.Second)
	for _, name := range []string{"from", "to"} {
		if locked, err := rlock.New(other, name).IsLocked(ctx); !locked || err != nil {
			t.Fatalf("member %s of a held Multi: locked %v, %v", name, locked, err)
		}
	}
	release(t, ls)
}

// RedLock over three Servers, the independent nodes it is meant for: two
// processes (a Client on each node each) exclude each other, tokens rise,
// and a majority is enough.
func testRedLock(t *testing.T, suite Suite) {
	ctx := ctxTimeout(t, 30*time.Second)
	nodes := []Server{suite.NewServer(t), suite.NewServer(t), suite.NewServer(t)}
	process := func() lease.Locker {
		var ls []lease.Locker
		for _, n := range nodes {
			ls = append(ls, rlock.New(n.Open(), "report"))
		}
		return quorum.RedLock(ls...)
	}
	p1, p2 := process(), process()

	var mu sync.Mutex
	var last uint64
	inside := 0
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for _, p := range []lease.Locker{p1, p2} {
		wg.Go(func() {
			for range 5 {
				ls, err := p.Acquire(ctx)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				inside++
				if inside != 1 {
					errs <- fmt.Errorf("%d holders at once", inside)
				}
				if ls.Token() <= last {
					errs <- fmt.Errorf("token %d after %d", ls.Token(), last)
				}
				last = ls.Token()
				inside--
				mu.Unlock()
				if err := ls.Release(context.Background()); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// One node's lock taken by someone else: the two others are a majority.
	other := acquire(t, ctx, rlock.New(nodes[2].Open(), "report", leasehold.WithLeaseTime(time.Minute)))
	ls, err := p1.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("RedLock with two of three nodes free: %v", err)
	}
	release(t, ls)
	release(t, other)
}
