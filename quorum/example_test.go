package quorum_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/quorum"
	"github.com/leasehold/leasehold/rlock"
)

// redisAddrs are three independent Redis servers the examples run against,
// started by TestMain. In your code, the addresses of your Redis nodes.
var redisAddrs [3]string

// openClients opens one Client on each of the examples' servers.
func openClients() []*leasehold.Client {
	var cs []*leasehold.Client
	for _, addr := range redisAddrs {
		c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{addr}})
		if err != nil {
			log.Fatal(err)
		}
		cs = append(cs, c)
	}
	return cs
}

// A Multi holds all of its locks or none: here an order, its stock and its
// payment together.
func ExampleMulti() {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddrs[0]}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	payment, err := rlock.New(c, "payment:7").Acquire(ctx) // held elsewhere
	if err != nil {
		log.Fatal(err)
	}
	checkout := quorum.Multi(rlock.New(c, "order:7"), rlock.New(c, "stock:7"), rlock.New(c, "payment:7"))
	_, err = checkout.TryAcquire(ctx)
	fmt.Println("refused:", errors.Is(err, lease.ErrNotAcquired))
	locked, _ := rlock.New(c, "order:7").IsLocked(ctx)
	fmt.Println("order left locked:", locked)

	payment.Release(ctx)
	l, err := checkout.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("holding all three")
	l.Release(ctx)
	// Output:
	// refused: true
	// order left locked: false
	// holding all three
}

// MultiWith tunes the attempt: each member gets 50ms to answer before the
// attempt gives up on it.
func ExampleMultiWith() {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddrs[0]}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	transfer := quorum.MultiWith(quorum.Config{NodeTimeout: 50 * time.Millisecond},
		rlock.New(c, "account:alice"), rlock.New(c, "account:bob"))
	l, err := transfer.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("holding both accounts")
	l.Release(ctx)
	// Output: holding both accounts
}

// A RedLock holds a majority of the same lock taken on independent Redis
// servers.
func ExampleRedLock() {
	cs := openClients()
	for _, c := range cs {
		defer c.Close()
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var nodes []lease.Locker
	for _, c := range cs {
		nodes = append(nodes, rlock.New(c, "leader"))
	}
	l, err := quorum.RedLock(nodes...).Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("holding", l.Name(), "on a majority")
	l.Release(ctx)
	// Output: holding redlock(leader,leader,leader) on a majority
}

// RedLockWith tunes the attempt: a 50ms budget per node, so a dead node
// costs little of the lease.
func ExampleRedLockWith() {
	cs := openClients()
	for _, c := range cs {
		defer c.Close()
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var nodes []lease.Locker
	for _, c := range cs {
		nodes = append(nodes, rlock.New(c, "scheduler"))
	}
	lock := quorum.RedLockWith(quorum.Config{NodeTimeout: 50 * time.Millisecond}, nodes...)
	first, err := lock.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	first.Release(ctx)
	second, err := lock.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	second.Release(ctx)
	fmt.Println("token rose:", second.Token() > first.Token())
	// Output: token rose: true
}
