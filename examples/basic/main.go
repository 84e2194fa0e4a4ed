// Command basic is leasehold's reentrant lock in one run: two Clients (two
// services, say) contend for the lock "orders"; the holder re-enters it
// through its lease's context; the waiter sleeps until the release wakes it
// (no polling); fencing tokens rise with each acquisition; and a lease with a
// fixed lease time tells its holder when it runs out.
//
// It uses the Redis at $REDIS_ADDR, or starts a redis-server of its own on a
// free loopback port and stops it on the way out.
//
//	go run ./examples/basic
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/rlock"
)

func main() {
	log.SetFlags(0)
	if err := withRedis(run); err != nil {
		log.Fatal(err)
	}
}

func run(addr string) error {
	opt := rueidis.ClientOption{InitAddress: []string{addr}}
	billing, err := leasehold.Open(opt)
	if err != nil {
		return err
	}
	defer billing.Close()
	shipping, err := leasehold.Open(opt)
	if err != nil {
		return err
	}
	defer shipping.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	orders := rlock.New(billing, "orders")
	outer, err := orders.Acquire(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("billing holds %q, fencing token %d\n", outer.Name(), outer.Token())

	// Reentrancy flows through the lease's context.
	inner, err := orders.Acquire(outer.Context())
	if err != nil {
		return err
	}
	// One hold, one holder: the inner lease fences with the outer's token.
	fmt.Printf("billing re-entered it: hold count %d, token %d, the same: %v\n",
		inner.HoldCount(), inner.Token(), inner.Token() == outer.Token())

	// Shipping waits; nothing polls: the release will wake it.
	waiting := rlock.New(shipping, "orders").AcquireAsync(ctx)
	time.Sleep(100 * time.Millisecond)
	fmt.Println("shipping waits for it")

	if err := inner.Release(ctx); err != nil {
		return err
	}
	released := time.Now()
	if err := outer.Release(ctx); err != nil {
		return err
	}
	l, err := waiting.Result()
	if err != nil {
		return err
	}
	fmt.Printf("billing released it; shipping holds it %v later, token %d, higher: %v\n",
		time.Since(released).Round(100*time.Microsecond), l.Token(), l.Token() > inner.Token())
	if err := l.Release(ctx); err != nil {
		return err
	}

	// A fixed lease runs out unless released; its holder hears first.
	job, err := rlock.New(billing, "nightly-job", leasehold.WithLeaseTime(300*time.Millisecond)).Acquire(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	<-job.Lost()
	fmt.Printf("the 300ms lease on %q was lost after %v: %v\n", job.Name(),
		time.Since(start).Round(10*time.Millisecond), job.Err())
	return nil
}
