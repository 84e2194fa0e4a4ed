package leasehold_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/script"
)

// In Redis Cluster on Redis 7+, unlock messages go by sharded pub/sub, as
// Redisson's do there by default: a release SPUBLISHes, so a Redisson waiter
// (SSUBSCRIBE) hears it, and it stays on the nodes of its slot instead of
// being broadcast to the whole cluster; a Redisson unlock SPUBLISHes, and a
// leasehold waiter hears it even without invalidations. WithClassicPubSub
// keeps PUBLISH and SUBSCRIBE for clusters shared with Redisson set up the
// classic way.
//
// Redis 6.2 has no sharded pub/sub: there the Redisson-style SSUBSCRIBE
// subtests are skipped, and a release is broadcast as with WithClassicPubSub.
func TestClusterShardedPubSub(t *testing.T) {
	name, major := redistest.Version()
	sharded := name == "valkey" || major >= 7
	cl := redistest.StartCluster(t, 3)
	java := cl.Client()
	ctx := locktest.Ctx(t, time.Minute)
	const lock = "sharded"
	channel := script.KeysOf(lock).Channel
	owner, other := nodesOf(t, cl, lock)

	t.Run("Redisson waiter hears a release", func(t *testing.T) {
		if !sharded {
			t.Skip("no sharded pub/sub on this server")
		}
		c := locktest.OpenAt(t, cl.Option())
		heard := subscribe(t, ctx, java, java.B().Ssubscribe().Channel(channel).Build())
		ls := locktest.MustAcquire(t, rlock.New(c, lock), ctx)
		before := publishes(t, other)
		released := time.Now()
		locktest.Release(t, ls)
		select {
		case m := <-heard:
			if m != "0" {
				t.Fatalf("SSUBSCRIBE heard %q, want Redisson's unlock message 0", m)
			}
			t.Logf("a Redisson-style SSUBSCRIBE waiter heard the release %v after it", time.Since(released))
		case <-time.After(5 * time.Second):
			t.Fatal("a Redisson-style SSUBSCRIBE waiter never heard the release")
		}
		if d := publishes(t, other).sub(before); d.classic != 0 {
			t.Fatalf("a node without the slot received %d classic publish messages over the cluster bus", d.classic)
		}
	})

	t.Run("Redisson unlock wakes a waiter without invalidations", func(t *testing.T) {
		if !sharded {
			t.Skip("no sharded pub/sub on this server")
		}
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: cl.Addrs(), DisableCache: true})
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		c, err := leasehold.New(rc) // New has no invalidation hook: only the message wakes it
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if held, err := redistest.RedissonLock(ctx, java, lock); err != nil || !held {
			t.Fatalf("Redisson lock: held %v, %v", held, err)
		}
		f := rlock.New(c, lock).AcquireAsync(ctx)
		locktest.Eventually(t, 5*time.Second, "waiter subscribed", func() bool { return c.Stats().Subscriptions == 1 })
		unlocked := time.Now()
		if err := redistest.RedissonUnlock(ctx, java, lock, "spublish"); err != nil {
			t.Fatal(err)
		}
		ls, err := f.Result()
		if err != nil {
			t.Fatal(err)
		}
		// Redisson's lease was 30s: only the SPUBLISHed message explains
		// a wake-up well before it.
		if el := time.Since(unlocked); el > 5*time.Second {
			t.Fatalf("woke %v after Redisson's sharded unlock", el)
		}
		t.Logf("a leasehold waiter (New, no invalidations) woke %v after Redisson's SPUBLISH unlock", time.Since(unlocked))
		locktest.Release(t, ls)
	})

	t.Run("a release costs the rest of the cluster nothing", func(t *testing.T) {
		// A classic subscriber on a node that does not own the slot hears a
		// classic release (PUBLISH is broadcast over the cluster bus) and
		// not a sharded one.
		for _, classic := range []bool{true, false} {
			var opts []leasehold.Option
			if classic {
				opts = append(opts, leasehold.WithClassicPubSub())
			}
			c := locktest.OpenAt(t, cl.Option(), opts...)
			direct := nodeClient(t, other)
			heard := subscribe(t, ctx, direct, direct.B().Subscribe().Channel(channel).Build())
			const n = 20
			before := publishes(t, owner)
			for range n {
				locktest.Release(t, locktest.MustAcquire(t, rlock.New(c, lock), ctx))
			}
			sent := publishes(t, owner).sub(before)
			got := drain(heard, 300*time.Millisecond)
			t.Logf("classic=%v: %d releases; the slot's node sent %d publish and %d publishshard messages over the cluster bus; a classic subscriber on another node heard %d",
				classic, n, sent.classic, sent.sharded, got)
			// What subscribers hear decides; the bus counters back it
			// where the server counts them.
			counted := busCounted(t, owner)
			switch {
			case classic && (got != n || (counted && sent.classic < n)):
				t.Fatalf("classic: the other node heard %d of %d releases, %d bus messages", got, n, sent.classic)
			case !classic && !sharded && got != n:
				t.Fatalf("default on a server without sharded pub/sub: the other node heard %d of %d releases", got, n)
			case !classic && sharded && (got != 0 || sent.classic != 0):
				t.Fatalf("sharded: the other node heard %d releases, %d classic bus messages; want none", got, sent.classic)
			}
			c.Close()
		}
	})
}

// nodesOf returns the node that owns the slot of key, and another.
func nodesOf(t *testing.T, cl *redistest.Cluster, key string) (owner, other *redistest.Server) {
	t.Helper()
	slot := cl.KeySlot(key)
	for _, s := range cl.Nodes {
		info, err := s.Do("CLUSTER", "NODES").ToString()
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(info) {
			f := strings.Fields(line)
			if len(f) < 9 || !strings.Contains(f[2], "myself") {
				continue
			}
			for _, r := range f[8:] {
				lo, hi, found := strings.Cut(r, "-")
				if !found {
					hi = lo
				}
				l, _ := strconv.ParseInt(lo, 10, 64)
				h, _ := strconv.ParseInt(hi, 10, 64)
				if slot >= l && slot <= h {
					owner = s
				}
			}
		}
	}
	if owner == nil {
		t.Fatalf("no node owns the slot of %q", key)
	}
	for _, s := range cl.Nodes {
		if s != owner {
			return owner, s
		}
	}
	return owner, nil
}

// nodeClient is a plain client of one node alone.
func nodeClient(t *testing.T, s *redistest.Server) rueidis.Client {
	t.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	return rc
}

// subscribe runs sub on rc until the test ends and returns the messages.
func subscribe(t *testing.T, ctx context.Context, rc rueidis.Client, sub rueidis.Completed) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	got := make(chan string, 1024)
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		once := false
		_ = rc.Receive(rueidis.WithOnSubscriptionHook(ctx, func(s rueidis.PubSubSubscription) {
			if !once {
				once = true
				close(ready)
			}
		}), sub, func(m rueidis.PubSubMessage) { got <- m.Message })
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
		t.Fatal("subscription not confirmed")
	}
	return got
}

// drain counts the messages that arrive within d.
func drain(ch <-chan string, d time.Duration) int {
	n := 0
	timeout := time.After(d)
	for {
		select {
		case <-ch:
			n++
		case <-timeout:
			return n
		}
	}
}

// busCounts are a node's pub/sub messages sent over the cluster bus.
type busCounts struct{ classic, sharded int64 }

func (a busCounts) sub(b busCounts) busCounts {
	return busCounts{a.classic - b.classic, a.sharded - b.sharded}
}

// busCounted reports whether s counts the pub/sub messages it sends over the
// cluster bus: Valkey 8.0.0 to 8.0.2 do not count those sent with their
// light header (fixed in 8.0.3).
func busCounted(t *testing.T, s *redistest.Server) bool {
	t.Helper()
	info, err := s.Do("INFO", "server").ToString()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "valkey_version:"); ok {
			patch, ok := strings.CutPrefix(v, "8.0.")
			n, _ := strconv.Atoi(patch)
			return !ok || n >= 3
		}
	}
	return true
}

// publishes reads CLUSTER INFO's counts of pub/sub messages the node sent
// over the cluster bus, and received.
func publishes(t *testing.T, s *redistest.Server) busCounts {
	t.Helper()
	info, err := s.Do("CLUSTER", "INFO").ToString()
	if err != nil {
		t.Fatal(err)
	}
	var b busCounts
	for line := range strings.Lines(info) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "cluster_stats_messages_publish_sent", "cluster_stats_messages_publish_received":
			b.classic += n
		case "cluster_stats_messages_publishshard_sent", "cluster_stats_messages_publishshard_received":
			b.sharded += n
		}
	}
	return b
}
