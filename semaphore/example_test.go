package semaphore_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/semaphore"
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

// Eight jobs on two services share a partner's API that takes at most 3
// calls at once: each job holds a permit while it calls.
func ExampleNew() {
	a, b := openClient(), openClient()
	defer a.Close()
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Once, by whoever comes first: the total, if it was never set.
	if _, err := semaphore.New(a, "partner-api").TrySetPermits(ctx, 3); err != nil {
		log.Fatal(err)
	}
	var mu sync.Mutex
	calling, most := 0, 0
	var wg sync.WaitGroup
	for i := range 8 {
		c := []*leasehold.Client{a, b}[i%2]
		wg.Go(func() {
			l, err := semaphore.New(c, "partner-api").Acquire(ctx) // waits for a permit
			if err != nil {
				log.Fatal(err)
			}
			defer l.Release(context.Background())
			mu.Lock()
			calling++
			most = max(most, calling)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond) // the call
			mu.Lock()
			calling--
			mu.Unlock()
		})
	}
	wg.Wait()
	fmt.Println("calls at once, at most:", most)
	n, _ := semaphore.New(a, "partner-api").AvailablePermits(ctx)
	fmt.Println("permits available after:", n)
	// Output:
	// calls at once, at most: 3
	// permits available after: 3
}

// A lease of several permits takes them together, and waits until that
// many are free at once; meanwhile smaller takers stand back for it.
func ExampleSemaphore_Weighted() {
	c := openClient()
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := semaphore.New(c, "exports")
	s.TrySetPermits(ctx, 4)

	small, err := s.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("a small export holds 1 of 4")
	go func() {
		time.Sleep(100 * time.Millisecond)
		fmt.Println("the small export is done")
		small.Release(ctx)
	}()
	big, err := s.Weighted(4).Acquire(ctx) // waits for all 4
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("the full export holds all 4")
	_, err = s.TryAcquire(ctx)
	fmt.Println("another small one meanwhile:", err)
	big.Release(ctx)
	// Output:
	// a small export holds 1 of 4
	// the small export is done
	// the full export holds all 4
	// another small one meanwhile: try-acquire "exports": lease: not acquired
}

// AddPermits changes the total while leases are held; taking permits away
// makes new takers wait until enough come back.
func ExampleSemaphore_AddPermits() {
	c := openClient()
	defer c.Close()
	ctx := context.Background()
	s := semaphore.New(c, "crawlers")
	s.TrySetPermits(ctx, 2)
	l, _ := s.Acquire(ctx)
	s.AddPermits(ctx, -2) // down to 0 from 2, with one held
	n, _ := s.AvailablePermits(ctx)
	fmt.Println("available:", n)
	l.Release(ctx)
	s.AddPermits(ctx, 3)
	n, _ = s.AvailablePermits(ctx)
	fmt.Println("available:", n)
	// Output:
	// available: -1
	// available: 3
}
