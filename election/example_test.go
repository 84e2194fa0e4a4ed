package election_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/election"
	"github.com/leasehold/leasehold/lease"
)

// redisAddr is the Redis the examples run against: a redis-server that
// TestMain starts. In your code, the address of your Redis.
var redisAddr string

// openClient opens a Client on the examples' Redis: one per service.
func openClient() *leasehold.Client {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	return c
}

// Two instances of a scheduler campaign; the first leads until it resigns,
// then the second leads, in a later term.
func ExampleElection_Campaign() {
	one, two := openClient(), openClient()
	defer one.Close()
	defer two.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	first, err := election.New(one, "scheduler").Campaign(ctx, "10.0.0.1:8080")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("10.0.0.1 leads")
	next := make(chan *lease.Lease)
	go func() {
		ls, err := election.New(two, "scheduler").Campaign(ctx, "10.0.0.2:8080") // waits
		if err != nil {
			log.Fatal(err)
		}
		next <- ls
	}()
	time.Sleep(100 * time.Millisecond)
	fmt.Println("10.0.0.1 resigns")
	first.Release(ctx)
	second := <-next
	fmt.Println("10.0.0.2 leads, in a later term:", second.Token() > first.Token())
	second.Release(ctx)
	// Output:
	// 10.0.0.1 leads
	// 10.0.0.1 resigns
	// 10.0.0.2 leads, in a later term: true
}

// Every instance can watch who leads: the current leader at once, then each
// change of value or of leader. A Leader with no Owner means nobody leads.
func ExampleElection_Observe() {
	leader, watcher := openClient(), openClient()
	defer leader.Close()
	defer watcher.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	e := election.New(leader, "compactor")
	ls, err := e.Campaign(ctx, "host-a")
	if err != nil {
		log.Fatal(err)
	}
	leaders := election.New(watcher, "compactor").Observe(ctx)
	fmt.Println("leader:", (<-leaders).Value)
	if err := e.Proclaim(ctx, "host-a:9090"); err != nil {
		log.Fatal(err)
	}
	fmt.Println("leader:", (<-leaders).Value)
	ls.Release(ctx) // resign
	l := <-leaders
	fmt.Println("nobody leads:", l.Owner == "", "after term", l.Token == ls.Token())
	// Output:
	// leader: host-a
	// leader: host-a:9090
	// nobody leads: true after term true
}

// Leader reads who leads now, or says nobody does.
func ExampleElection_Leader() {
	c := openClient()
	defer c.Close()
	ctx := context.Background()

	e := election.New(c, "singleton-consumer")
	_, err := e.Leader(ctx)
	fmt.Println(err)
	ls, err := e.Campaign(ctx, "worker-7")
	if err != nil {
		log.Fatal(err)
	}
	defer ls.Release(ctx)
	l, err := e.Leader(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(l.Value, l.Token == ls.Token())
	// Output:
	// leader "singleton-consumer": election: no leader
	// worker-7 true
}

// Lead runs a leader's work while it leads, and resigns when the work
// returns: here a scheduler drains its queue, then hands over.
func ExampleElection_Lead() {
	c := openClient()
	defer c.Close()
	ctx := context.Background()

	e := election.New(c, "billing-scheduler")
	err := e.Lead(ctx, "host-a", func(ctx context.Context) error {
		// ctx ends if the leadership is lost: stop scheduling then.
		l, err := e.Leader(ctx)
		if err != nil {
			return err
		}
		fmt.Println(l.Value, "leads")
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	_, err = e.Leader(ctx)
	fmt.Println(errors.Is(err, election.ErrNoLeader))
	// Output:
	// host-a leads
	// true
}
