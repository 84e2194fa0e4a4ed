package partition_test

import (
	"context"
	"fmt"
	"log"
	"slices"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/partition"
)

// redisAddr is the Redis the examples run against: a redis-server that
// TestMain starts. In your code, the address of your Redis.
var redisAddr string

// Two replicas of a service split 8 shards of a stream between them: each
// runs 4, and when one stops, the other runs all 8.
func Example() {
	open := func() *leasehold.Client {
		c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}})
		if err != nil {
			log.Fatal(err)
		}
		return c
	}
	one, two := open(), open()
	defer one.Close()
	defer two.Close()
	consume := func(ctx context.Context, shard int) error {
		<-ctx.Done() // read shard until told to stop
		return nil
	}
	ctx1, stop1 := context.WithCancel(context.Background())
	ctx2, stop2 := context.WithCancel(context.Background())
	defer stop2()
	g1, g2 := partition.New(one, "shards", 8), partition.New(two, "shards", 8)
	done1, done2 := make(chan error, 1), make(chan error, 1)
	go func() { done1 <- g1.Run(ctx1, consume) }()
	go func() { done2 <- g2.Run(ctx2, consume) }()

	for len(g1.Owned()) != 4 || len(g2.Owned()) != 4 {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("each runs 4:", len(g1.Owned()), len(g2.Owned()))
	stop1() // the first replica shuts down: its shards move to the second
	fmt.Println("first Run:", <-done1)
	for len(g2.Owned()) != 8 {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("the second runs", g2.Owned(), slices.Equal(g2.Owned(), []int{0, 1, 2, 3, 4, 5, 6, 7}))
	stop2()
	fmt.Println("second Run:", <-done2)
	// Output:
	// each runs 4: 4 4
	// first Run: <nil>
	// the second runs [0 1 2 3 4 5 6 7] true
	// second Run: <nil>
}
