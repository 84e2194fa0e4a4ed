package lease_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/redis/rueidis"
	"golang.org/x/sync/errgroup"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

// Workers of an errgroup each sync one tenant under that tenant's lock: the
// lock is taken, the work runs while it holds, and it is given back, even
// if the work fails or panics. A worker whose lease is lost stops, and Do
// says so.
func ExampleDo() {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	var synced atomic.Int32
	g, ctx := errgroup.WithContext(context.Background())
	for _, tenant := range []string{"acme", "globex", "initech", "umbrella"} {
		g.Go(func() error {
			return lease.Do(ctx, rlock.New(c, "sync/"+tenant), func(ctx context.Context) error {
				// ctx ends if the lease is lost or the group gives up.
				synced.Add(1)
				return ctx.Err()
			})
		})
	}
	if err := g.Wait(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("tenants synced:", synced.Load())
	// Output: tenants synced: 4
}

// Every replica of a service runs the same job on the same schedule; the
// one that takes the lock runs it, the others skip this run.
func ExampleTryDo() {
	replicaA, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	defer replicaA.Close()
	replicaB, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	defer replicaB.Close()

	job := func(c *leasehold.Client, replica string, during func()) {
		err := lease.TryDo(context.Background(), rlock.New(c, "nightly-report"), func(ctx context.Context) error {
			during()
			fmt.Println(replica + ": report written")
			return nil
		})
		if errors.Is(err, lease.ErrNotAcquired) {
			fmt.Println(replica + ": skipped, another replica runs it")
		} else if err != nil {
			log.Print(err)
		}
	}
	// B's tick comes while A's run is under way.
	job(replicaA, "a", func() { job(replicaB, "b", func() {}) })
	// Output:
	// b: skipped, another replica runs it
	// a: report written
}

// An HTTP handler that changes what a lock guards answers 409 Conflict at
// once while someone else holds it, instead of making the client wait.
func ExampleTryDo_httpHandler() {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	deploy := func(w http.ResponseWriter, r *http.Request) {
		app := r.PathValue("app")
		err := lease.TryDo(r.Context(), rlock.New(c, "deploy/"+app), func(ctx context.Context) error {
			return nil // the deployment, stopped when ctx ends
		})
		switch {
		case errors.Is(err, lease.ErrNotAcquired):
			http.Error(w, app+" is being deployed", http.StatusConflict)
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		default:
			fmt.Fprintln(w, app, "deployed")
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /deploy/{app}", deploy)

	post := func() {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("POST", "/deploy/shop", nil))
		fmt.Print(rec.Code, " ", rec.Body.String())
	}
	// Someone else is deploying the shop.
	other, err := rlock.New(c, "deploy/shop").Acquire(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	post()
	other.Release(context.Background())
	post()
	// Output:
	// 409 shop is being deployed
	// 200 shop deployed
}
