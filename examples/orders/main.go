// Command orders processes a stream of orders, each under its own lock,
// at high throughput by overlapping lock attempts with AcquireAsync.
//
// Two consumers (two replicas of one service, each with its own Client)
// read the same feed of orders, and each order must be processed exactly
// once: a consumer takes the order's lock, checks whether the other consumer
// processed the order already, and if not processes it and records that.
// Check and work are separate round trips; only the lock keeps the two
// consumers from both passing the check.
//
// One at a time, every order costs a consumer four round trips in a row:
// acquire, check, work, release. The pipeline runs three stages instead.
// The acquire stage keeps up to -window attempts in flight with
// AcquireAsync, so the locks of the next orders are usually held by the
// time the process stage gets to them. The process stage takes the orders
// in feed order, in batches: it waits for the oldest attempt, adds every
// attempt behind it that has already ended, and checks and works the whole
// batch in two round trips. The release stage gives the batch's locks back
// behind it. rueidis carries all of this over one connection, and commands
// sent at the same time share round trips.
//
// The process stage never waits for a later attempt while an earlier order
// is unprocessed, though later attempts may hold their locks meanwhile. That
// cannot deadlock: both consumers go through the feed in the same order, so
// the one behind only ever waits for orders the one ahead has processed and
// is releasing (the release stage waits on nothing else), and when both wait
// for the same order, one of them holds it.
//
// It runs the feed one at a time, then pipelined, and prints both rates. It
// exits non-zero if an order was processed twice or not at all.
//
// It uses the Redis at $REDIS_ADDR, or starts a redis-server of its own on a
// free loopback port and stops it on the way out.
//
//	go run ./examples/orders
//	go run ./examples/orders -orders 20000 -window 256
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"golang.org/x/sync/errgroup"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

var (
	orders = flag.Int("orders", 1000, "orders in the feed")
	window = flag.Int("window", 64, "lock attempts in flight per consumer")
)

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
	if *orders <= 0 || *window <= 0 {
		return fmt.Errorf("-orders and -window must be positive")
	}
	var consumers [2]*consumer
	for i := range consumers {
		// The consumer's rueidis client, for its orders and, wrapped by
		// leasehold.New (whose Close leaves it open), for its locks. On one
		// connection (rueidis' default is up to four), so that commands
		// sent at the same time share round trips.
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, PipelineMultiplex: -1})
		if err != nil {
			return err
		}
		defer rc.Close()
		c, err := leasehold.New(rc)
		if err != nil {
			return err
		}
		defer c.Close()
		consumers[i] = &consumer{c: c, rc: rc, id: fmt.Sprint(i + 1)}
	}
	fmt.Printf("%d orders, 2 consumers, each order processed exactly once under its lock\n", *orders)

	var rates [2]float64
	for i, mode := range []struct {
		name string
		feed func(*consumer, context.Context, string) error
	}{
		{"one at a time", (*consumer).oneAtATime},
		{fmt.Sprintf("pipelined, window %d", *window), (*consumer).pipelined},
	} {
		feed := fmt.Sprintf("feed%d", i+1) // each run its own orders
		start := time.Now()
		g, gctx := errgroup.WithContext(ctx)
		for _, c := range consumers {
			g.Go(func() error { return mode.feed(c, gctx, feed) })
		}
		if err := g.Wait(); err != nil {
			return err
		}
		took := time.Since(start)
		rates[i] = float64(*orders) / took.Seconds()
		var processed, twice int64
		for _, c := range consumers {
			processed += c.processed.Swap(0)
			twice += c.twice.Swap(0)
		}
		fmt.Printf("%-22s %d orders in %v: %.0f orders/s (%d processed, %d twice)\n",
			mode.name+":", *orders, took.Round(time.Millisecond), rates[i], processed, twice)
		if processed != int64(*orders) || twice > 0 {
			return fmt.Errorf("FAILED: %d of %d orders processed, %d of them twice", processed, *orders, twice)
		}
	}
	fmt.Printf("ok: every order processed exactly once; pipelined %.1fx the rate of one at a time\n", rates[1]/rates[0])
	return nil
}

// consumer is one replica of the service.
type consumer struct {
	c         *leasehold.Client
	rc        rueidis.Client
	id        string
	processed atomic.Int64
	twice     atomic.Int64
}

func orderName(feed string, n int) string { return fmt.Sprintf("%s:order:%d", feed, n) }

// oneAtATime takes each order's lock, processes it and releases it before
// going on to the next.
func (c *consumer) oneAtATime(ctx context.Context, feed string) error {
	for n := range *orders {
		l, err := rlock.New(c.c, orderName(feed, n)).Acquire(ctx)
		if err != nil {
			return err
		}
		err = c.process(ctx, []*lease.Lease{l})
		if rerr := l.Release(ctx); err == nil {
			err = rerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// pipelined runs the three stages: acquire (Futures, at most window in
// flight), process (in feed order, in batches), release.
func (c *consumer) pipelined(ctx context.Context, feed string) error {
	g, ctx := errgroup.WithContext(ctx)
	// The channel's capacity plus the Future the process stage holds is
	// the window.
	futures := make(chan *lease.Future, *window-1)
	batches := make(chan []*lease.Lease, 2)
	g.Go(func() error { // acquire
		defer close(futures)
		for n := range *orders {
			f := rlock.New(c.c, orderName(feed, n)).AcquireAsync(ctx)
			select {
			case futures <- f:
			case <-ctx.Done():
				f.Cancel()
				return ctx.Err()
			}
		}
		return nil
	})
	g.Go(func() error { // process
		defer close(batches)
		err := c.processStage(ctx, futures, batches)
		if err != nil {
			for f := range futures { // after Cancel an attempt holds nothing
				f.Cancel()
			}
		}
		return err
	})
	g.Go(func() error { // release
		var errs []error
		for batch := range batches {
			// Released together: rueidis pipelines them into shared
			// round trips.
			var wg sync.WaitGroup
			berrs := make([]error, len(batch))
			for i, l := range batch {
				wg.Go(func() { berrs[i] = l.Release(context.WithoutCancel(ctx)) })
			}
			wg.Wait()
			errs = append(errs, berrs...)
		}
		return errors.Join(errs...)
	})
	return g.Wait()
}

// processStage takes the Futures in feed order and processes their orders
// in batches: it waits for the oldest attempt alone, adds the attempts
// behind it that have ended already, and processes the batch in two round
// trips however large it is. It never waits for a later attempt while an
// earlier one is unprocessed, which keeps the two consumers from waiting on
// each other (see the package comment).
func (c *consumer) processStage(ctx context.Context, futures <-chan *lease.Future, batches chan<- []*lease.Lease) error {
	next, ok := <-futures
	for ok {
		var batch []*lease.Lease
		for ok && (len(batch) == 0 || isDone(next)) {
			l, err := next.Result()
			if err != nil {
				batches <- batch
				return err
			}
			batch = append(batch, l)
			next, ok = <-futures
		}
		err := c.process(ctx, batch)
		batches <- batch
		if err != nil {
			return err
		}
	}
	return nil
}

func isDone(f *lease.Future) bool {
	select {
	case <-f.Done():
		return true
	default:
		return false
	}
}

// process does each order of the batch unless the other consumer did. The
// check and the work are separate round trips: only the orders' locks keep
// the other consumer from passing the same check in between and doing an
// order again.
func (c *consumer) process(ctx context.Context, batch []*lease.Lease) error {
	checks := make(rueidis.Commands, len(batch))
	for i, l := range batch {
		checks[i] = c.rc.B().Get().Key(l.Name() + ":done").Build()
	}
	var work rueidis.Commands
	for i, res := range c.rc.DoMulti(ctx, checks...) {
		err := res.Error()
		if err == nil {
			continue // the other consumer did it
		}
		if !rueidis.IsRedisNil(err) {
			return err
		}
		// The work (here: count it), and the record that it is done.
		name := batch[i].Name()
		work = append(work,
			c.rc.B().Incr().Key(name+":times").Build(),
			c.rc.B().Set().Key(name+":done").Value(c.id).Build())
	}
	if len(work) == 0 {
		return nil
	}
	res := c.rc.DoMulti(ctx, work...)
	for i := 0; i < len(res); i += 2 {
		times, err := res[i].AsInt64()
		if err == nil {
			err = res[i+1].Error()
		}
		if err != nil {
			return err
		}
		c.processed.Add(1)
		if times > 1 {
			c.twice.Add(1)
		}
	}
	return nil
}
