package bench_test

import (
	"context"
	"fmt"
	"strings"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/rlock"
)

// A service built on go-redis keeps its go-redis client for its own commands
// and gives leasehold a rueidis client parsed from the same URL: two more
// connections to each Redis node, one that carries the locks' scripts, their
// subscriptions and invalidations, one on which holders hear of a lock
// removed behind their back. It lives in this module, not the root, so that
// leasehold's users never download go-redis.
func Example_goRedis() {
	srv, err := redistest.Launch() // stands for the service's Redis
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Stop()
	url := "redis://" + srv.Addr() + "/0" // the service's REDIS_URL
	ctx := context.Background()

	// The service's go-redis client, as it has it.
	gopt, err := goredis.ParseURL(url)
	if err != nil {
		fmt.Println(err)
		return
	}
	gopt.ClientName = "billing-goredis"
	rdb := goredis.NewClient(gopt)
	defer rdb.Close()

	// leasehold's, from the same URL: rueidis parses it as go-redis does.
	opt, err := rueidis.ParseURL(url)
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := leasehold.Open(opt, leasehold.WithClientName("billing"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	l, err := rlock.New(c, "invoice:42").Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	// The guarded work goes through go-redis as before.
	if err := rdb.Set(ctx, "invoice:42:sent-by", l.Owner(), 0).Err(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("sent invoice 42 under the lock:", l.Release(ctx) == nil)

	list, err := rdb.ClientList(ctx).Result()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("connections: go-redis %d, leasehold %d\n",
		strings.Count(list, " name=billing-goredis "), strings.Count(list, " name=billing/"+c.ID()+" "))
	// Output:
	// sent invoice 42 under the lock: true
	// connections: go-redis 1, leasehold 2
}
