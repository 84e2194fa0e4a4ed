package fairqueue_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/script"
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

// waitQueued waits until n owners wait in the queue of the fair lock name.
// The examples use it to line waiters up in a known order.
func waitQueued(_ *leasehold.Client, name string, n int64) {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redisAddr}, DisableCache: true})
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if got, _ := rc.Do(context.Background(), rc.B().Llen().Key(script.KeysOf(name).FairQueue).Build()).AsInt64(); got == n {
			return
		}
	}
	log.Fatalf("%d waiters did not queue for %s", n, name)
}

// Waiters get a fair lock in the order they asked for it.
func ExampleNew() {
	c := openClient()
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lock := fairqueue.New(c, "printer")
	held, err := lock.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		order []int
	)
	for i := 1; i <= 3; i++ {
		wg.Go(func() {
			l, err := lock.Acquire(ctx)
			if err != nil {
				log.Fatal(err)
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			l.Release(ctx)
		})
		waitQueued(c, "printer", int64(i)) // i waits behind those before it
	}
	held.Release(ctx)
	wg.Wait()
	fmt.Println("served in order:", order)
	// Output: served in order: [1 2 3]
}

// A free fair lock belongs to whoever waits for it first: TryAcquire never
// jumps the queue.
func ExampleLock_TryAcquire() {
	c := openClient()
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lock := fairqueue.New(c, "scanner")
	held, err := lock.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	waiter := lock.AcquireAsync(ctx)
	waitQueued(c, "scanner", 1)
	held.Release(ctx)

	_, err = lock.TryAcquire(ctx) // the waiter comes first
	fmt.Println(errors.Is(err, lease.ErrNotAcquired))
	l, err := waiter.Result()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("the waiter holds it")
	l.Release(ctx)
	// Output:
	// true
	// the waiter holds it
}

// ForceRelease deletes the lock and hands it to the head of the queue.
func ExampleLock_ForceRelease() {
	worker, operator := openClient(), openClient()
	defer worker.Close()
	defer operator.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stuck, err := fairqueue.New(worker, "batch").Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer stuck.Release(ctx) // fails: an operator took it away
	waiter := fairqueue.New(worker, "batch").AcquireAsync(ctx)
	waitQueued(worker, "batch", 1)

	deleted, err := fairqueue.New(operator, "batch").ForceRelease(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("deleted:", deleted)
	l, err := waiter.Result()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("the waiter holds it")
	l.Release(ctx)
	// Output:
	// deleted: true
	// the waiter holds it
}
