package lease_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

// redisAddr is the Redis the examples run against: a redis-server that
// TestMain starts. In your code, the address of your Redis.
var redisAddr string

// The holder of a lease watches Lost (or its Context) while it works, and
// stops when the lock is lost: here a fixed lease runs out in the middle of
// a job that takes too long.
func ExampleLease_Lost() {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	l, err := rlock.New(c, "reindex", leasehold.WithLeaseTime(200*time.Millisecond)).Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Release(ctx)
	select {
	case <-l.Lost():
		fmt.Println("stopped:", l.Err())
	case <-time.After(10 * time.Second): // the job
		fmt.Println("done")
	}
	// Output: stopped: hold "reindex": lease: lost: the lease time ran out
}

// Work started under a lease's context is cancelled when the lease is lost
// or released; context.Cause says which.
func ExampleLease_Context() {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	l, err := rlock.New(c, "compaction").Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	work := l.Context()
	if err := l.Release(ctx); err != nil {
		log.Fatal(err)
	}
	<-work.Done()
	fmt.Println(context.Cause(work))
	// Output: lease: not held: released
}

// Reentrancy flows through the context: an Acquire under a lease's context
// re-enters the lock at once, and each lease is released on its own.
func ExampleLease_HoldCount() {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	accounts := rlock.New(c, "accounts")
	outer, err := accounts.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	inner, err := accounts.Acquire(outer.Context()) // does not wait for itself
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("hold count:", inner.HoldCount())
	inner.Release(ctx)
	fmt.Println("hold count:", outer.HoldCount())
	outer.Release(ctx)
	// Output:
	// hold count: 2
	// hold count: 1
}

// Every acquisition of a lock name draws a higher fencing token, whoever
// takes it. Hand the token to the resource the lock guards, and have it
// refuse writes carrying a token lower than one it has seen.
func ExampleLease_Token() {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	ledger := rlock.New(c, "ledger")
	first, err := ledger.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	first.Release(ctx)
	second, err := ledger.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	second.Release(ctx)
	fmt.Println("token rose:", second.Token() > first.Token())
	// Output: token rose: true
}

// AcquireAsync starts an attempt and returns at once; Cancel stops it and
// leaves nothing held.
func ExampleFuture() {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	lock := rlock.New(c, "exports")
	held, err := lock.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	f := lock.AcquireAsync(ctx) // waits for held
	select {
	case <-f.Done():
		fmt.Println("unexpected: the attempt ended")
	case <-time.After(100 * time.Millisecond):
		fmt.Println("still waiting")
	}
	f.Cancel()
	_, err = f.Result()
	fmt.Println("cancelled:", errors.Is(err, context.Canceled))
	held.Release(ctx)
	// Output:
	// still waiting
	// cancelled: true
}

// Any lock is a lease.Locker: code that needs a lock can take one without
// knowing which kind.
func ExampleLocker() {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	runExclusive := func(l lease.Locker, job func()) error {
		ls, err := l.Acquire(context.Background())
		if err != nil {
			return err
		}
		defer ls.Release(context.Background())
		job()
		return nil
	}
	for _, l := range []lease.Locker{rlock.New(c, "job-a"), fairqueue.New(c, "job-b")} {
		if err := runExclusive(l, func() { fmt.Println("running alone") }); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// running alone
	// running alone
}

// An ObserverFunc counts what happens to a Client's leases.
func ExampleObserverFunc() {
	var mu sync.Mutex
	counts := map[lease.Kind]int{}
	count := lease.ObserverFunc(func(e lease.Event) {
		mu.Lock()
		counts[e.Kind]++
		mu.Unlock()
	})
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}},
		leasehold.WithObserver(count))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	lock := rlock.New(c, "counted")
	for range 3 {
		l, err := lock.Acquire(ctx)
		if err != nil {
			log.Fatal(err)
		}
		if _, err := lock.TryAcquire(ctx); err == nil { // another owner: refused
			log.Fatal("acquired twice")
		}
		l.Release(ctx)
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Println(lease.Acquired, counts[lease.Acquired])
	fmt.Println(lease.Abandoned, counts[lease.Abandoned])
	fmt.Println(lease.Released, counts[lease.Released])
	// Output:
	// acquired 3
	// abandoned 3
	// released 3
}

// SlogObserver logs routine events at Debug and trouble at Warn: here an
// operator force-releases a lock, and its holder finds out. The handler
// drops the time and the attributes that change from run to run.
func ExampleSlogObserver() {
	drop := map[string]bool{slog.TimeKey: true, "owner": true, "token": true, "waited": true, "held": true}
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if drop[a.Key] {
				return slog.Attr{}
			}
			return a
		},
	}))
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}},
		leasehold.WithObserver(lease.SlogObserver(logger)))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	lock := rlock.New(c, "billing")
	l, err := lock.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := lock.ForceRelease(ctx); err != nil {
		log.Fatal(err)
	}
	l.Release(ctx)
	// Output:
	// level=DEBUG msg="lease acquired" lock=billing
	// level=WARN msg="lease lost" lock=billing err="hold \"billing\": lease: lost: not held in Redis at release"
	// level=WARN msg="lease released" lock=billing err="release \"billing\": lease: not held: hold \"billing\": lease: lost: not held in Redis at release"
}
