package leasetest_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/leasetest"
	"github.com/leasehold/leasehold/rlock"
)

// In a test, Open(t) is a Client on a Redis of the test's own, and both
// are gone when the test ends.
func ExampleOpen() {
	t := &exampleT{} // in a test: the test's t
	defer t.end()

	c := leasetest.Open(t)
	err := lease.Do(context.Background(), rlock.New(c, "orders"), func(ctx context.Context) error {
		fmt.Println("holding orders")
		return nil
	})
	fmt.Println("done:", err)
	// Output:
	// holding orders
	// done: <nil>
}

// Two Clients on one Server are two processes: while one holds the lock,
// the other's attempt is refused. Addr is for a client of the test's own.
func ExampleNewServer() {
	t := &exampleT{} // in a test: the test's t
	defer t.end()

	srv := leasetest.NewServer(t)
	a, b := srv.Open(), srv.Open()
	ctx := context.Background()
	held, err := rlock.New(a, "orders").Acquire(ctx)
	if err != nil {
		panic(err)
	}
	_, err = rlock.New(b, "orders").TryAcquire(ctx)
	fmt.Println("b while a holds:", errors.Is(err, lease.ErrNotAcquired))

	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()},
		DisableCache: true, AlwaysRESP2: true, ForceSingleClient: true})
	if err != nil {
		panic(err)
	}
	defer rc.Close()
	n, _ := rc.Do(ctx, rc.B().Exists().Key("orders").Build()).AsInt64()
	fmt.Println("key orders in Redis:", n)

	if err := held.Release(ctx); err != nil {
		panic(err)
	}
	l, err := rlock.New(b, "orders").TryAcquire(ctx)
	fmt.Println("b after a released:", err == nil, l.Token() > held.Token())
	// Output:
	// b while a holds: true
	// key orders in Redis: 1
	// b after a released: true true
}
