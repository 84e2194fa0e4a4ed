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
	case <-work(l.Context()): // l.Context() is cancelled if the lease is lost
		fmt.Println("work done; releasing")
		return nil
	}
}

// work stands for the job the lock guards; it stops early if ctx ends.
func work(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
		}
	}()
	return done
}
