package main

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/rlock"
)

func run(ctx context.Context, addr string) error {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		return err
	}
	defer c.Close() // releases whatever is still held

	l, err := rlock.New(c, "quickstart").Acquire(ctx) // waits until held, or ctx ends
	if err != nil {
		return err
	}
	defer l.Release(context.Background())
	fmt.Printf("holding %q, fencing token %d\n", l.Name(), l.Token())

	select {
	case <-l.Lost(): // renewal failed, or the lock expired or was taken
		return l.Err()
	case <-time.After(500 * time.Millisecond): // the work, which stops when l.Context() ends
		fmt.Println("work done; releasing")
		return nil
	}
}
