package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

// redisAddr is the Redis the examples run against: a redis-server that
// TestMain starts. In your code, the address of your Redis.
var redisAddr string

// openClient opens a Client on the examples' Redis: one per service.
func openClient() *leasehold.Client {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	return c
}

// Two services contend for one lock: the second waits until the first
// releases it, woken by the release (it does not poll).
func ExampleNew() {
	billing, shipping := openClient(), openClient()
	defer billing.Close()
	defer shipping.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first, err := rlock.New(billing, "orders").Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("billing holds orders")
	go func() {
		time.Sleep(100 * time.Millisecond)
		fmt.Println("billing releases orders")
		first.Release(ctx)
	}()
	second, err := rlock.New(shipping, "orders").Acquire(ctx) // waits for billing
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("shipping holds orders")
	second.Release(ctx)
	// Output:
	// billing holds orders
	// billing releases orders
	// shipping holds orders
}

// TryAcquire does not wait: it fails with lease.ErrNotAcquired while
// another owner holds the lock.
func ExampleLock_TryAcquire() {
	a, b := openClient(), openClient()
	defer a.Close()
	defer b.Close()

	ctx := context.Background()
	held, err := rlock.New(a, "cron:cleanup").TryAcquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer held.Release(ctx)
	_, err = rlock.New(b, "cron:cleanup").TryAcquire(ctx)
	fmt.Println(err)
	fmt.Println(errors.Is(err, lease.ErrNotAcquired))
	// Output:
	// try-acquire "cron:cleanup": lease: not acquired
	// true
}

// Acquire waits no longer than its ctx allows: the deadline is the longest
// the caller will wait.
func ExampleLock_Acquire() {
	a, b := openClient(), openClient()
	defer a.Close()
	defer b.Close()

	ctx := context.Background()
	held, err := rlock.New(a, "migrations").Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer held.Release(ctx)

	wait, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = rlock.New(b, "migrations").Acquire(wait)
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	// Output: true
}

// AcquireAsync overlaps lock attempts: start several, then collect them.
func ExampleLock_AcquireAsync() {
	c := openClient()
	defer c.Close()

	ctx := context.Background()
	var futures []*lease.Future
	for _, name := range []string{"shard-1", "shard-2", "shard-3"} {
		futures = append(futures, rlock.New(c, name).AcquireAsync(ctx))
	}
	for _, f := range futures {
		l, err := f.Result()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("holding", l.Name())
		defer l.Release(ctx)
	}
	// Output:
	// holding shard-1
	// holding shard-2
	// holding shard-3
}

// HoldCount reads the hold count of the lease a context carries, without a
// round trip.
func ExampleLock_HoldCount() {
	c := openClient()
	defer c.Close()

	ctx := context.Background()
	lock := rlock.New(c, "inventory")
	outer, err := lock.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	inner, err := lock.Acquire(outer.Context()) // re-enters
	if err != nil {
		log.Fatal(err)
	}
	n, _ := lock.HoldCount(inner.Context())
	fmt.Println("hold count:", n)
	inner.Release(ctx)
	outer.Release(ctx)
	n, _ = lock.HoldCount(ctx) // ctx carries no lease
	fmt.Println("hold count:", n)
	// Output:
	// hold count: 2
	// hold count: 0
}

// IsLocked and RemainTTL inspect a lock someone else holds.
func ExampleLock_IsLocked() {
	worker, operator := openClient(), openClient()
	defer worker.Close()
	defer operator.Close()

	ctx := context.Background()
	held, err := rlock.New(worker, "backfill").Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer held.Release(ctx)
	lock := rlock.New(operator, "backfill")
	locked, _ := lock.IsLocked(ctx)
	ttl, _ := lock.RemainTTL(ctx)
	fmt.Println("locked:", locked)
	fmt.Println("lease runs at most 30s:", ttl > 0 && ttl <= 30*time.Second)
	// Output:
	// locked: true
	// lease runs at most 30s: true
}

// ForceRelease deletes a lock whoever holds it, for operators; the holder
// hears of it at once: its Client reads the lock again when Redis tells it
// the key changed.
func ExampleLock_ForceRelease() {
	worker, operator := openClient(), openClient()
	defer worker.Close()
	defer operator.Close()

	ctx := context.Background()
	held, err := rlock.New(worker, "stuck-job").Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // a job at work
	deleted, err := rlock.New(operator, "stuck-job").ForceRelease(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("deleted:", deleted)
	select {
	case <-held.Lost():
		fmt.Println("holder heard:", errors.Is(held.Err(), lease.ErrLost))
	case <-time.After(5 * time.Second): // its next renewal is 10s away
		fmt.Println("holder did not hear")
	}
	err = held.Release(ctx)
	fmt.Println("holder's release:", errors.Is(err, lease.ErrNotHeld))
	// Output:
	// deleted: true
	// holder heard: true
	// holder's release: true
}
