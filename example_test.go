package leasehold_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/fence"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/rw"
)

// redisAddr is the Redis the examples run against: a redis-server that
// TestMain starts. In your code, the address of your Redis.
var redisAddr string

func ExampleOpen() {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := rlock.New(c, "orders").Acquire(ctx) // ctx's deadline bounds the wait
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("holding", l.Name())
	if err := l.Release(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("released")
	// Output:
	// holding orders
	// released
}

// New wraps a rueidis client the program already has; closing the Client
// leaves it open.
func ExampleNew() {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	c, err := leasehold.New(rc)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	l, err := rlock.New(c, "invoices").TryAcquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Release(ctx)
	fmt.Println("holding", l.Name())
	// Output: holding invoices
}

// WithClientName names the Client's connections NAME/ID, ID being the
// Client's ID, so that CLIENT LIST (and the leasehold command's inspect)
// tells which process holds a lock.
func ExampleWithClientName() {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}},
		leasehold.WithClientName("billing-7"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	list, err := rc.Do(ctx, rc.B().ClientList().Build()).ToString()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.Contains(list, " name=billing-7/"+c.ID()+" "))
	// Output: true
}

// Close gives up what the Client still holds: its leases are lost with
// lease.ErrClosed, and their locks released.
func ExampleClient_Close() {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	l, err := rlock.New(c, "shutdown").Acquire(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	c.Close()
	<-l.Lost()
	fmt.Println("lost on close:", errors.Is(l.Err(), lease.ErrClosed))
	// Output: lost on close: true
}

// The watchdog keeps renewing a lease for as long as its holder holds it:
// here a 1s lease is still held 2s later.
func ExampleWithWatchdog() {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}},
		leasehold.WithWatchdog(time.Second)) // renewed every 333ms
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	l, err := rlock.New(c, "long-job").Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	fmt.Println("still held:", l.Err() == nil)
	if err := l.Release(ctx); err != nil {
		log.Fatal(err)
	}
	// Output: still held: true
}

// A fixed lease is not renewed: it runs out, and its holder hears of it
// just before Redis lets anyone else in.
func ExampleWithLeaseTime() {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lock := rlock.New(c, "nightly-report", leasehold.WithLeaseTime(200*time.Millisecond))
	l, err := lock.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	<-l.Lost()
	fmt.Println("lost:", l.Err())
	next, err := lock.Acquire(ctx) // waits for Redis to expire the lock
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("taken again after it ran out")
	next.Release(ctx)
	// Output:
	// lost: hold "nightly-report": lease: lost: the lease time ran out
	// taken again after it ran out
}

// An Observer hears of every lease of the Client; lease.SlogObserver logs
// them with log/slog.
func ExampleWithObserver() {
	seen := lease.ObserverFunc(func(e lease.Event) {
		fmt.Println(e.Kind, e.Name)
	})
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}},
		leasehold.WithObserver(seen))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	l, err := rlock.New(c, "observed").Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// acquired observed
	// released observed
}

// A fair lock's waiter keeps its place in the queue by asking again within
// the queue timeout; one that stops asking (its process died) is passed over
// once the timeout has passed.
func ExampleWithQueueTimeout() {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	l, err := fairqueue.New(c, "payouts", leasehold.WithQueueTimeout(2*time.Second)).Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Release(ctx)
	fmt.Println("holding", l.Name())
	// Output: holding payouts
}

// With writer preference a waiting writer holds new readers back, so a
// stream of readers cannot starve it.
func ExampleWithWriterPreference() {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	catalog := rw.New(c, "catalog", leasehold.WithWriterPreference())
	reading, err := catalog.Read().Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	writer := catalog.Write().AcquireAsync(ctx) // waits for the reader
	// Until the writer has announced itself, a new reader still gets in.
	for {
		r, err := catalog.Read().TryAcquire(ctx)
		if err != nil {
			fmt.Println("new reader held back:", errors.Is(err, lease.ErrNotAcquired))
			break
		}
		r.Release(ctx)
		time.Sleep(10 * time.Millisecond)
	}
	reading.Release(ctx)
	w, err := writer.Result()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("writer holds it")
	w.Release(ctx)
	// Output:
	// new reader held back: true
	// writer holds it
}

// Check says what is wrong: here, that the Client is closed. HealthHandler
// serves it over HTTP.
func ExampleClient_Check() {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	fmt.Println(c.Check(ctx))
	c.Close()
	fmt.Println(strings.ReplaceAll(c.Check(ctx).Error(), c.ID(), "ID")) // the id is random
	// Output:
	// <nil>
	// leasehold: check: lease: client closed: client ID
}

// A readiness probe (or a load balancer's check) on /healthz: 200 while
// Redis answers and every lease is renewed in time, 503 and what is wrong
// otherwise.
func ExampleClient_HealthHandler() {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	mux := http.NewServeMux()
	mux.Handle("/healthz", c.HealthHandler()) // in a service: its own mux
	srv := httptest.NewServer(mux)
	defer srv.Close()
	probe := func() {
		res, err := http.Get(srv.URL + "/healthz")
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		fmt.Print(res.StatusCode, " ", strings.ReplaceAll(string(body), c.ID(), "ID")) // the id is random
	}
	probe()
	c.Close()
	probe()
	// Output:
	// 200 ok
	// 503 leasehold: check: lease: client closed: client ID
}

// Fence writes through the Client's own connection: the write of a holder
// whose lease a newer holder replaced is refused.
func ExampleClient_Fence() {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	l := rlock.New(c, "report")
	paused, err := l.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	paused.Release(ctx) // as if its lease had run out while its holder was paused
	cur, err := l.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer cur.Release(ctx)

	store := c.Fence()
	fmt.Println(store.Set(ctx, "report:body", "new", cur.Token()))
	err = store.Set(ctx, "report:body", "late", paused.Token())
	fmt.Println(errors.Is(err, fence.ErrStale))
	// Output:
	// <nil>
	// true
}
