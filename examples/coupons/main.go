// Command coupons shows what a lock is for. Three servers, each with its own
// Client (three processes, say) and a few request handlers, hand out a
// limited stock of coupons kept in Redis. A handler reads the stock, checks
// the customer (a millisecond), and takes one coupon.
//
// With the lock "coupons" around that read-check-take, the stock never goes
// below zero and exactly the stock is handed out. With -nolock, handlers on
// different servers read the same stock and each take from it: the stock
// goes below zero, coupons that do not exist are handed out.
//
// It exits non-zero if, with the lock, the stock went below zero or the
// count is off.
//
// It uses the Redis at $REDIS_ADDR, or starts a redis-server of its own on a
// free loopback port and stops it on the way out.
//
//	go run ./examples/coupons
//	go run ./examples/coupons -nolock
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"golang.org/x/sync/errgroup"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/rlock"
)

var (
	stock    = flag.Int64("stock", 100, "coupons in stock")
	servers  = flag.Int("servers", 3, "servers, each with its own Client")
	handlers = flag.Int("handlers", 4, "request handlers per server")
	check    = flag.Duration("check", time.Millisecond, "time a handler takes to check a customer")
	nolock   = flag.Bool("nolock", false, "hand out coupons without the lock")
)

const stockKey = "coupons:stock"

func main() {
	log.SetFlags(0)
	flag.Parse()
	if err := withRedis(run); err != nil {
		log.Fatal(err)
	}
}

func run(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // bounds the whole run
	defer cancel()
	opt := rueidis.ClientOption{InitAddress: []string{addr}}
	admin, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		return err
	}
	defer admin.Close()
	if err := admin.Do(ctx, admin.B().Set().Key(stockKey).Value(fmt.Sprint(*stock)).Build()).Error(); err != nil {
		return err
	}
	how := `with the lock "coupons"`
	if *nolock {
		how = "WITHOUT a lock"
	}
	fmt.Printf("%d coupons in stock; %d servers x %d handlers hand them out %s\n", *stock, *servers, *handlers, how)

	var lowest atomic.Int64 // the lowest stock any handler left behind
	lowest.Store(*stock)
	handed := make([]atomic.Int64, *servers)
	g, gctx := errgroup.WithContext(ctx)
	for s := range *servers {
		// The server's rueidis client, for its data and, wrapped by
		// leasehold.New (whose Close leaves it open), for its locks.
		rc, err := rueidis.NewClient(opt)
		if err != nil {
			return err
		}
		defer rc.Close()
		c, err := leasehold.New(rc)
		if err != nil {
			return err
		}
		defer c.Close()
		lock := rlock.New(c, "coupons")
		for range *handlers {
			g.Go(func() error {
				for {
					got, left, err := handOut(gctx, rc, lock)
					if err != nil || !got {
						return err
					}
					handed[s].Add(1)
					for {
						low := lowest.Load()
						if left >= low || lowest.CompareAndSwap(low, left) {
							break
						}
					}
				}
			})
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}

	var total int64
	for s := range handed {
		n := handed[s].Load()
		total += n
		fmt.Printf("server %d handed out %d coupons\n", s+1, n)
	}
	left, err := admin.Do(ctx, admin.B().Get().Key(stockKey).Build()).AsInt64()
	if err != nil {
		return err
	}
	fmt.Printf("handed out %d of %d; stock left %d, lowest %d\n", total, *stock, left, lowest.Load())
	switch {
	case !*nolock && (lowest.Load() < 0 || total != *stock):
		return errors.New("FAILED: with the lock, the stock went below zero or the count is off")
	case !*nolock:
		fmt.Println("ok: with the lock the stock never went below zero")
	case lowest.Load() < 0:
		fmt.Printf("oversold by %d: without the lock, handlers read the same stock and each took from it\n", total-*stock)
	default:
		fmt.Println("no oversell this time: without the lock that is luck (try a larger -check)")
	}
	return nil
}

// handOut serves one request: under the lock (unless -nolock) it reads the
// stock, checks the customer and takes a coupon. It reports whether it took
// one and the stock it left.
func handOut(ctx context.Context, rc rueidis.Client, lock *rlock.Lock) (got bool, left int64, err error) {
	if !*nolock {
		l, err := lock.Acquire(ctx)
		if err != nil {
			return false, 0, err
		}
		defer l.Release(context.WithoutCancel(ctx))
		// Work under the lease's context: should the lease be lost, the
		// DECR below is cancelled rather than done without the lock.
		ctx = l.Context()
	}
	n, err := rc.Do(ctx, rc.B().Get().Key(stockKey).Build()).AsInt64()
	if err != nil || n <= 0 {
		return false, n, err
	}
	time.Sleep(*check) // the customer check: the window in which others read the same stock
	left, err = rc.Do(ctx, rc.B().Decr().Key(stockKey).Build()).AsInt64()
	return err == nil, left, err
}
