package lease_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/quorum"
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/rw"
	"github.com/leasehold/leasehold/semaphore"
)

// doKind is a lock kind as Do sees it: the locker a worker takes, and a
// rival's locker that it excludes (for rw's read lock, the write lock).
// Both are made on nodes, one process' Clients of the servers of startNodes.
type doKind struct {
	name      string
	reentrant bool
	locker    func(t *testing.T, c nodes, name string, opts ...leasehold.LockOption) lease.Locker
	rival     func(t *testing.T, c nodes, name string) lease.Locker
}

// nodes are one process' Clients, one per Redis: a RedLock's independent
// nodes; the other kinds use the first.
type nodes []*leasehold.Client

// startNodes starts the Redis servers of a test: three, for RedLock.
func startNodes(t *testing.T) []*redistest.Server {
	return []*redistest.Server{redistest.Start(t), redistest.Start(t), redistest.Start(t)}
}

// open returns a process' Clients of srvs.
func open(t *testing.T, srvs []*redistest.Server) nodes {
	var c nodes
	for _, srv := range srvs {
		c = append(c, locktest.Open(t, srv))
	}
	return c
}

func rlockOf(_ *testing.T, c nodes, name string, opts ...leasehold.LockOption) lease.Locker {
	return rlock.New(c[0], name, opts...)
}

// semaphoreOf is a semaphore of one permit.
func semaphoreOf(t *testing.T, c nodes, name string, opts ...leasehold.LockOption) lease.Locker {
	s := semaphore.New(c[0], name, opts...)
	if _, err := s.TrySetPermits(context.Background(), 1); err != nil {
		t.Fatalf("TrySetPermits: %v", err)
	}
	return s
}

// members are the locks a Multi of name is made of.
func members(c nodes, name string, opts ...leasehold.LockOption) []lease.Locker {
	return []lease.Locker{rlock.New(c[0], name+".a", opts...), rlock.New(c[0], name+".b", opts...), rlock.New(c[0], name+".c", opts...)}
}

// majority are the locks a RedLock of name is made of: one per node.
func majority(c nodes, name string, opts ...leasehold.LockOption) []lease.Locker {
	var ls []lease.Locker
	for _, n := range c {
		ls = append(ls, rlock.New(n, name, opts...))
	}
	return ls
}

var doKinds = []doKind{
	{name: "rlock", reentrant: true, locker: rlockOf, rival: func(t *testing.T, c nodes, name string) lease.Locker { return rlockOf(t, c, name) }},
	{name: "fairqueue", reentrant: true,
		locker: func(_ *testing.T, c nodes, name string, opts ...leasehold.LockOption) lease.Locker {
			return fairqueue.New(c[0], name, opts...)
		},
		rival: func(_ *testing.T, c nodes, name string) lease.Locker { return fairqueue.New(c[0], name) }},
	{name: "rw read",
		locker: func(_ *testing.T, c nodes, name string, opts ...leasehold.LockOption) lease.Locker {
			return rw.New(c[0], name, opts...).Read()
		},
		rival: func(_ *testing.T, c nodes, name string) lease.Locker { return rw.New(c[0], name).Write() }},
	{name: "rw write", reentrant: true,
		locker: func(_ *testing.T, c nodes, name string, opts ...leasehold.LockOption) lease.Locker {
			return rw.New(c[0], name, opts...).Write()
		},
		rival: func(_ *testing.T, c nodes, name string) lease.Locker { return rw.New(c[0], name).Read() }},
	{name: "semaphore", locker: semaphoreOf,
		rival: func(t *testing.T, c nodes, name string) lease.Locker { return semaphoreOf(t, c, name) }},
	{name: "multi",
		locker: func(_ *testing.T, c nodes, name string, opts ...leasehold.LockOption) lease.Locker {
			return quorum.Multi(members(c, name, opts...)...)
		},
		rival: func(_ *testing.T, c nodes, name string) lease.Locker { return rlock.New(c[0], name+".b") }},
	{name: "redlock",
		locker: func(_ *testing.T, c nodes, name string, opts ...leasehold.LockOption) lease.Locker {
			return quorum.RedLock(majority(c, name, opts...)...)
		},
		rival: func(_ *testing.T, c nodes, name string) lease.Locker {
			return quorum.RedLock(majority(c, name)...)
		}},
}

// TestDo checks, for every kind, that fn runs while the lock is held by
// the worker and no one else, and that the lock is given back after.
func TestDo(t *testing.T) {
	srvs := startNodes(t)
	for _, k := range doKinds {
		t.Run(k.name, func(t *testing.T) {
			c, other := open(t, srvs), open(t, srvs)
			name := "do-" + k.name
			ctx := locktest.Ctx(t, 10*time.Second)
			ran := false
			err := lease.Do(ctx, k.locker(t, c, name), func(ctx context.Context) error {
				ran = true
				if err := ctx.Err(); err != nil {
					t.Errorf("fn's ctx ended at once: %v", err)
				}
				_, err := k.rival(t, other, name).TryAcquire(ctx)
				if !errors.Is(err, lease.ErrNotAcquired) {
					t.Errorf("a rival's TryAcquire while fn ran = %v; want ErrNotAcquired", err)
				}
				return nil
			})
			if err != nil || !ran {
				t.Fatalf("Do = %v, fn ran %v; want nil, true", err, ran)
			}
			l, err := k.rival(t, other, name).TryAcquire(ctx)
			if err != nil {
				t.Fatalf("a rival's TryAcquire after Do returned = %v; want the lock given back", err)
			}
			locktest.Release(t, l)
		})
	}
}

// TestTryDoBusy checks that TryDo returns at once, with ErrNotAcquired and
// without calling fn, when another owner holds the lock; and that Do gives
// up with ctx's error when ctx ends first.
func TestTryDoBusy(t *testing.T) {
	srvs := startNodes(t)
	for _, k := range doKinds {
		t.Run(k.name, func(t *testing.T) {
			c, other := open(t, srvs), open(t, srvs)
			name := "busy-" + k.name
			ctx := locktest.Ctx(t, 10*time.Second)
			held := locktest.MustAcquire(t, k.rival(t, other, name), ctx)
			defer locktest.Release(t, held)

			fn := func(context.Context) error { t.Error("fn ran without the lock"); return nil }
			if err := lease.TryDo(ctx, k.locker(t, c, name), fn); !errors.Is(err, lease.ErrNotAcquired) {
				t.Errorf("TryDo = %v; want ErrNotAcquired", err)
			}
			wait, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			if err := lease.Do(wait, k.locker(t, c, name), fn); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Do with a 200ms wait = %v; want DeadlineExceeded", err)
			}
		})
	}
}

var errStopped = errors.New("work stopped")

// TestDoLost checks, for every kind, that fn's ctx ends when the lease is
// lost (here a fixed lease runs out under fn), with the lease's error as
// its cause, and that Do's error wraps both ErrLost and fn's.
func TestDoLost(t *testing.T) {
	srvs := startNodes(t)
	for _, k := range doKinds {
		t.Run(k.name, func(t *testing.T) {
			c := open(t, srvs)
			ctx := locktest.Ctx(t, 10*time.Second)
			var cause error
			err := lease.Do(ctx, k.locker(t, c, "lost-"+k.name, leasehold.WithLeaseTime(300*time.Millisecond)),
				func(ctx context.Context) error {
					<-ctx.Done()
					cause = context.Cause(ctx)
					return errStopped
				})
			if !errors.Is(cause, lease.ErrLost) {
				t.Errorf("fn's ctx ended with cause %v; want one wrapping ErrLost", cause)
			}
			if !errors.Is(err, lease.ErrLost) || !errors.Is(err, errStopped) {
				t.Errorf("Do = %v; want an error wrapping ErrLost and fn's error", err)
			}
		})
	}
}

// TestDoLostCause: fn returning its ctx's cause, the loss, as the README's
// pattern does, gets one message from Do, not the loss twice (it read
// `hold "x": lease: lost: ...` on two lines), wrapping ErrLost and the
// lease's error; and the Client closing under fn still wraps ErrLost.
func TestDoLostCause(t *testing.T) {
	srv := redistest.Start(t)
	c := locktest.Open(t, srv)
	ctx := locktest.Ctx(t, 10*time.Second)
	var ls *lease.Lease
	err := lease.Do(ctx, rlock.New(c, "lost-cause", leasehold.WithLeaseTime(200*time.Millisecond)), func(ctx context.Context) error {
		ls = lease.FromContext(ctx)
		<-ctx.Done()
		return fmt.Errorf("item y: %w", context.Cause(ctx))
	})
	want := `item y: hold "lost-cause": lease: lost: the lease time ran out`
	if err == nil || err.Error() != want || !errors.Is(err, lease.ErrLost) || !errors.Is(err, ls.Err()) {
		t.Errorf("Do = %q; want %q, wrapping ErrLost and the lease's error", err, want)
	}
	closing := locktest.Open(t, srv)
	err = lease.Do(ctx, rlock.New(closing, "closed-cause"), func(ctx context.Context) error {
		go closing.Close()
		<-ctx.Done()
		return context.Cause(ctx)
	})
	if !errors.Is(err, lease.ErrLost) || !errors.Is(err, lease.ErrClosed) || strings.Count(err.Error(), "client closed") != 1 {
		t.Errorf("Do = %q; want the Client's closing once, wrapping ErrLost and ErrClosed", err)
	}
}

// TestDoLostFnNil pins down that a loss while fn ran is reported even when
// fn itself returns nil: the work ran partly without the lock.
func TestDoLostFnNil(t *testing.T) {
	srv := redistest.Start(t)
	c, admin := locktest.Open(t, srv), srv.Client()
	ctx := locktest.Ctx(t, 10*time.Second)
	err := lease.Do(ctx, rlock.New(c, "lost-nil"), func(ctx context.Context) error {
		// Removed behind the holder's back: its Client hears it at once.
		if err := admin.Do(ctx, admin.B().Del().Key("lost-nil").Build()).Error(); err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	})
	if !errors.Is(err, lease.ErrLost) {
		t.Fatalf("Do = %v; want an error wrapping ErrLost", err)
	}
}

// TestDoCallerGivesUp checks that fn's ctx ends when the caller's ctx does,
// with the caller's cause, that fn's error is returned as it is, and that
// the lock is released although the caller's ctx has ended.
func TestDoCallerGivesUp(t *testing.T) {
	srv := redistest.Start(t)
	c := locktest.Open(t, srv)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	giveUp := errors.New("shutting down")
	var cause error
	err := lease.Do(ctx, rlock.New(c, "gives-up"), func(fnCtx context.Context) error {
		cancel(giveUp)
		<-fnCtx.Done()
		cause = context.Cause(fnCtx)
		return errStopped
	})
	if cause != giveUp {
		t.Errorf("fn's ctx ended with cause %v; want the caller's, %v", cause, giveUp)
	}
	if err != errStopped {
		t.Errorf("Do = %v; want fn's error as it is", err)
	}
	l, err := rlock.New(c, "gives-up").TryAcquire(context.Background())
	if err != nil {
		t.Fatalf("TryAcquire after Do = %v; want the lock released", err)
	}
	locktest.Release(t, l)
}

// TestDoReentry checks that fn's ctx carries the lease: an Acquire under it
// on the same lock through the same Client re-enters.
func TestDoReentry(t *testing.T) {
	srvs := startNodes(t)
	for _, k := range doKinds {
		if !k.reentrant {
			continue
		}
		t.Run(k.name, func(t *testing.T) {
			c := open(t, srvs)
			l := k.locker(t, c, "reentry-"+k.name)
			err := lease.Do(locktest.Ctx(t, 10*time.Second), l, func(ctx context.Context) error {
				inner, err := l.TryAcquire(ctx)
				if err != nil {
					return fmt.Errorf("re-entry: %w", err)
				}
				defer inner.Release(ctx)
				if n := inner.HoldCount(); n != 2 {
					return fmt.Errorf("HoldCount = %d; want 2", n)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestDoPanic checks that a panicking fn's lease is released before the
// panic goes on.
func TestDoPanic(t *testing.T) {
	srv := redistest.Start(t)
	c := locktest.Open(t, srv)
	l := rlock.New(c, "panics")
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v; want the panic to go on", r)
			}
		}()
		_ = lease.Do(context.Background(), l, func(context.Context) error { panic("boom") })
	}()
	held, err := l.TryAcquire(context.Background())
	if err != nil {
		t.Fatalf("TryAcquire after the panic = %v; want the lock released", err)
	}
	locktest.Release(t, held)
}

// TestDoHammer runs many goroutines of two Clients through Do on one lock
// and checks that no two fns ever run at once.
func TestDoHammer(t *testing.T) {
	srv := redistest.Start(t)
	clients := []*leasehold.Client{locktest.Open(t, srv), locktest.Open(t, srv)}
	ctx := locktest.Ctx(t, 60*time.Second)
	var inside, most, runs atomic.Int32
	done := make(chan error)
	const workers, each = 16, 10
	for w := range workers {
		go func() {
			l := rlock.New(clients[w%2], "hammer")
			for range each {
				err := lease.Do(ctx, l, func(context.Context) error {
					n := inside.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					time.Sleep(time.Millisecond)
					inside.Add(-1)
					runs.Add(1)
					return nil
				})
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range workers {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	if most.Load() != 1 || runs.Load() != workers*each {
		t.Fatalf("%d runs, at most %d at once; want %d, 1", runs.Load(), most.Load(), workers*each)
	}
}

// TestFromContext checks that fn finds its lease, and its fencing token, in
// its ctx, the inner one under a nested Do, and none outside.
func TestFromContext(t *testing.T) {
	srv := redistest.Start(t)
	c := locktest.Open(t, srv)
	ctx := context.Background()
	if l := lease.FromContext(ctx); l != nil {
		t.Fatalf("FromContext(Background) = %v; want nil", l)
	}
	err := lease.Do(ctx, rlock.New(c, "outer"), func(ctx context.Context) error {
		outer := lease.FromContext(ctx)
		if outer == nil || outer.Name() != "outer" || outer.Token() == 0 {
			return fmt.Errorf("FromContext under fn = %v; want the outer lease with its token", outer)
		}
		return lease.Do(ctx, rlock.New(c, "inner"), func(ctx context.Context) error {
			if l := lease.FromContext(ctx); l == nil || l.Name() != "inner" {
				return fmt.Errorf("FromContext under the nested fn = %v; want the inner lease", l)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}
