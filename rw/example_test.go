package rw_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rw"
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

// Readers share the lock; a writer waits until the last of them leaves.
func ExampleNew() {
	c := openClient()
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	prices := rw.New(c, "prices")
	r1, err := prices.Read().Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	r2, err := prices.Read().Acquire(ctx) // a second reader gets in at once
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("two readers")
	_, err = prices.Write().TryAcquire(ctx)
	fmt.Println("writer refused:", errors.Is(err, lease.ErrNotAcquired))

	writer := prices.Write().AcquireAsync(ctx)
	r1.Release(ctx)
	r2.Release(ctx)
	w, err := writer.Result()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("writer holds it")
	w.Release(ctx)
	// Output:
	// two readers
	// writer refused: true
	// writer holds it
}

// A writer can downgrade: it takes the read lock under its write lease's
// context, releases the write lock, and goes on reading while other readers
// come in.
func ExampleLock_Read() {
	c := openClient()
	defer c.Close()

	ctx := context.Background()
	config := rw.New(c, "config")
	w, err := config.Write().Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	r, err := config.Read().Acquire(w.Context()) // admitted under the write lease
	if err != nil {
		log.Fatal(err)
	}
	w.Release(ctx)
	other, err := config.Read().TryAcquire(ctx)
	fmt.Println("another reader gets in:", err == nil)
	other.Release(ctx)
	r.Release(ctx)
	// Output: another reader gets in: true
}

// Upgrading a read to a write is refused at once: two readers upgrading
// together would wait for each other for ever.
func ExampleLock_Write() {
	c := openClient()
	defer c.Close()

	ctx := context.Background()
	schema := rw.New(c, "schema")
	r, err := schema.Read().Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Release(ctx)
	_, err = schema.Write().Acquire(r.Context())
	fmt.Println(errors.Is(err, rw.ErrUpgrade))
	// Output: true
}

// ForceRelease deletes the lock, read or write, and wakes every waiter.
func ExampleLock_ForceRelease() {
	worker, operator := openClient(), openClient()
	defer worker.Close()
	defer operator.Close()

	ctx := context.Background()
	r, err := rw.New(worker, "snapshots").Read().Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Release(ctx) // fails: an operator took it away
	deleted, err := rw.New(operator, "snapshots").ForceRelease(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("deleted:", deleted)
	// Output: deleted: true
}
