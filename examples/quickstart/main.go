// Command quickstart is the quick start of README.md: take a lock, work while
// it holds, give it back.
//
//	go run ./examples/quickstart
package main

import (
	"cmp"
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

func main() {
	if err := run(cmp.Or(os.Getenv("REDIS_ADDR"), "localhost:6379")); err != nil {
		log.Fatal(err)
	}
}

func run(addr string) error {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		return err
	}
	defer c.Close() // one Client per process; Close gives back what is still held

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // the longest to wait
	defer cancel()
	return lease.Do(ctx, rlock.New(c, "quickstart"), func(ctx context.Context) error {
		// Held until this returns; ctx ends if the lock is lost (or ctx ends).
		fmt.Println("holding the lock")
		select {
		case <-time.After(500 * time.Millisecond): // the work
			fmt.Println("work done; giving the lock back")
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
}
