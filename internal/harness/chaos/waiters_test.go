package chaos

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/rw"
)

// waiterName is the CLIENT SETNAME of the waiters' connections, so that the
// test can find and kill them.
const waiterName = "chaos-waiter"

// open returns a Client closed when the test ends.
func open(t *testing.T, opt rueidis.ClientOption, opts ...leasehold.Option) *leasehold.Client {
	t.Helper()
	c, err := leasehold.Open(opt, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// killWaiters kills the waiters' connections: those in subscriber mode with
// CLIENT KILL TYPE pubsub (Redis 7.0 counts a RESP3 connection with
// subscriptions as one, although it also carries commands), or every one of
// them by id. It returns how many connections died.
func killWaiters(t *testing.T, srv *redistest.Server, byType bool) int64 {
	t.Helper()
	if byType {
		n, err := srv.Do("CLIENT", "KILL", "TYPE", "pubsub").AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	list, err := srv.Do("CLIENT", "LIST").ToString()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(list, "\n") {
		if !strings.Contains(line, " name="+waiterName+" ") {
			continue
		}
		id := strings.TrimPrefix(strings.Fields(line)[0], "id=")
		k, err := srv.Do("CLIENT", "KILL", "ID", id).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		n += k
	}
	return n
}

// A waiter whose connection breaks while it waits (killed with CLIENT KILL
// TYPE pubsub, killed by id, or cut by a proxy) still wakes when the lock is
// released: the Client reconnects, the hub subscribes again and has every
// waiter try once more.
// The holder's lease is 30s, so a waiter that missed the release message and
// slept until the lease ran out would take 30s; each must get the lock within
// a few seconds of the release.
func TestWaitersWakeAfterBrokenConnection(t *testing.T) {
	const watchdog = 30 * time.Second
	// 5s: a reconnection, a new subscription and a handoff to each of 3
	// waiters in turn, on a loaded machine; far below the 30s lease.
	const bound = 5 * time.Second
	kinds := []struct {
		name string
		lock func(c *leasehold.Client, name string) lease.Locker
	}{
		{"rlock", func(c *leasehold.Client, name string) lease.Locker { return rlock.New(c, name) }},
		{"fair", func(c *leasehold.Client, name string) lease.Locker { return fairqueue.New(c, name) }},
		{"rw", func(c *leasehold.Client, name string) lease.Locker { return rw.New(c, name).Write() }},
	}
	faults := []string{"CLIENT KILL TYPE pubsub", "CLIENT KILL ID", "proxy cut"}
	for _, k := range kinds {
		for _, fault := range faults {
			t.Run(k.name+"/"+fault, func(t *testing.T) {
				srv := redistest.Start(t)
				holder := open(t, srv.Option(), leasehold.WithWatchdog(watchdog))
				opt := srv.Option()
				opt.ClientName = waiterName
				var proxy *redistest.Proxy
				if fault == faults[2] {
					proxy = redistest.NewProxy(t, srv.Addr())
					opt.InitAddress = []string{proxy.Addr()}
				}
				waiters := open(t, opt, leasehold.WithWatchdog(watchdog))
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				name := "wake-" + k.name
				held, err := k.lock(holder, name).Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				const n = 3
				got := make(chan error, n)
				for range n {
					go func() {
						ls, err := k.lock(waiters, name).Acquire(ctx)
						if err == nil {
							err = ls.Release(context.Background())
						}
						got <- err
					}()
				}
				// rlock and rw: one channel for all; fair: one per waiter.
				subs := 1
				if k.name == "fair" {
					subs = n
				}
				subscribed := func() bool {
					chans, _ := srv.Do("PUBSUB", "CHANNELS", "*").AsStrSlice()
					return waiters.Stats().Waiters == n && len(chans) == subs
				}
				eventually(t, 10*time.Second, "waiters subscribed", subscribed)
				var killed int64
				switch fault {
				case faults[0]:
					killed = killWaiters(t, srv, true)
				case faults[1]:
					killed = killWaiters(t, srv, false)
				case faults[2]:
					proxy.Cut()
					killed = 1
				}
				if killed == 0 {
					t.Fatalf("%s killed no connection", fault)
				}
				totals.fault(fault+" under waiters", int(killed))
				// Release only once the subscriptions are back: the wake-up
				// must come through them, not from the retry every waiter
				// makes when the connection breaks.
				eventually(t, 10*time.Second, "waiters subscribed again", subscribed)
				released := time.Now()
				if err := held.Release(ctx); err != nil {
					t.Fatal(err)
				}
				for i := range n {
					select {
					case err := <-got:
						if err != nil {
							t.Fatalf("waiter: %v", err)
						}
					case <-time.After(bound - time.Since(released)):
						t.Fatalf("%d of %d waiters had the lock %v after the release (lease %v)", i, n, bound, watchdog)
					}
				}
				t.Logf("%s: %d connections killed; %d waiters had the lock in turn %v after the release",
					fault, killed, n, time.Since(released).Round(time.Millisecond))
			})
		}
	}
}

// The same with a Client in RESP2 (rueidis' AlwaysRESP2, as with a Redis
// older than 6 or a proxy that speaks only RESP2), where rueidis keeps
// subscriptions on a connection of their own: CLIENT KILL TYPE pubsub kills
// it, and rueidis v1.0.79 never makes it again (its Receive retries, for as
// long as the hub keeps the channel, on the dead connection, so the hub never
// hears that it broke). Unlock messages are lost from then on; what remains
// is the waiter's timer on the holder's remaining lease, and this test pins
// that bound: no waiter sleeps past the lease for want of the message, but it
// does sleep until the lease (2s here) ends. A rueidis limitation, reported
// with the suite's figures; RESP3 (the default with Redis 6+) is not affected.
func TestWaitersRESP2KilledSubscriber(t *testing.T) {
	const watchdog = 2 * time.Second
	srv := redistest.Start(t)
	holder := open(t, srv.Option(), leasehold.WithWatchdog(watchdog))
	opt := srv.Option()
	opt.ClientName = waiterName
	opt.AlwaysRESP2, opt.DisableCache = true, true // RESP2 has no client-side cache
	waiters := open(t, opt, leasehold.WithWatchdog(watchdog))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	held, err := rlock.New(holder, "resp2").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		ls, err := rlock.New(waiters, "resp2").Acquire(ctx)
		if err == nil {
			err = ls.Release(context.Background())
		}
		got <- err
	}()
	eventually(t, 10*time.Second, "the waiter subscribed", func() bool {
		chans, _ := srv.Do("PUBSUB", "CHANNELS", "*").AsStrSlice()
		return waiters.Stats().Waiters == 1 && len(chans) == 1
	})
	if killWaiters(t, srv, true) != 1 {
		t.Fatal("CLIENT KILL TYPE pubsub did not kill the RESP2 subscriber connection")
	}
	totals.fault("CLIENT KILL TYPE pubsub (RESP2)", 1)
	released := time.Now()
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	// The lease plus 1s for a loaded machine.
	case <-time.After(watchdog + time.Second):
		t.Fatalf("the waiter slept past the holder's lease (%v) after the release", watchdog)
	}
	t.Logf("RESP2: the waiter had the lock %v after the release (lease %v): woken by its lease timer, not the lost message",
		time.Since(released).Round(time.Millisecond), watchdog)
}
