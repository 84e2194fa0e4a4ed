package lua

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/script"
)

// The helpers take their keys and arguments as parameters, and the scripts
// number them differently (the channel prefix is KEYS[5] of fair_acquire,
// KEYS[4] of the others): this pins down that each script passes its own, by
// the head's channel and message each one publishes, and that prune drops a
// stale head in each, on every path that calls them.
func TestFairScriptsPruneAndTellHead(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const name = "f"
	// A refresh interval (a third of the queue timeout: 2 minutes) longer
	// than the lease: tell_head tells the head whenever it is called.
	fair := NewFair(name, Config{Lease: time.Minute, Latch: time.Minute, QueueTimeout: 6 * time.Minute})
	k := script.KeysOf(name)
	heard := listen(t, srv, k.Channel+":*")
	marker := k.Channel + ":marker"

	acquire := func(owner string) func() (any, error) {
		return func() (any, error) {
			g, err := fair.Try(ctx, c, owner, true)
			return g.Acquired, err
		}
	}
	release := func(owner, requestID string) func() (any, error) {
		return func() (any, error) {
			return fair.Release(ctx, c, owner, requestID, true, 0)
		}
	}
	abandon := func(owner string) func() (any, error) {
		return func() (any, error) { return fair.abandon(ctx, c, owner) }
	}
	force := func() (any, error) { return fair.ForceRelease(ctx, c) }
	keep := func(owners ...string) func() (any, error) {
		return func() (any, error) {
			missing, err := Missing(c.Do(ctx, fair.Keep.Call(owners).Eval(c, false)))
			return fmt.Sprint(missing), err
		}
	}

	// Each step runs on the state the ones before left.
	steps := []struct {
		name  string
		stale bool // put a waiter whose deadline has passed at the head first
		act   func() (any, error)
		want  any
		queue []string
		told  string // the owner told to try, "" for none
	}{
		{"a takes the free lock", false, acquire("a"), true, nil, ""},
		{"b queues", false, acquire("b"), false, []string{"b"}, ""},
		{"c queues", false, acquire("c"), false, []string{"b", "c"}, ""},
		// x has no place: it is reported, not given one (ZADD XX).
		{"fair_keep", true, keep("b", "x", "c"), "[1]", []string{"b", "c"}, "b"},
		{"fair_abandon: the head leaves", false, abandon("b"), true, []string{"c"}, "c"},
		{"fair_release frees", true, release("a", "r1"), Freed, []string{"c"}, "c"},
		{"fair_acquire: a newcomer to a free lock queues", true, acquire("d"), false, []string{"c", "d"}, "c"},
		{"fair_acquire: the head takes the lock", false, acquire("c"), true, []string{"d"}, "d"},
		{"fair_acquire: the holder re-enters", true, acquire("c"), true, []string{"d"}, "d"},
		{"fair_force_release", true, force, true, []string{"d"}, "d"},
		{"fair_release after the lease ran out", true, release("c", "r2"), NotHeld, []string{"d"}, "d"},
	}
	for _, st := range steps {
		if st.stale {
			srv.Do("LPUSH", k.FairQueue, "stale")
			srv.Do("ZADD", k.FairTimeout, "0", "stale")
		}
		if got, err := st.act(); err != nil || got != st.want {
			t.Fatalf("%s: got %v, %v; want %v", st.name, got, err, st.want)
		}
		queue, err := srv.Do("LRANGE", k.FairQueue, "0", "-1").AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		deadlines, _ := srv.Do("ZCARD", k.FairTimeout).AsInt64()
		if strings.Join(queue, ",") != strings.Join(st.queue, ",") || deadlines != int64(len(st.queue)) {
			t.Fatalf("%s: queue %v with %d deadlines, want %v", st.name, queue, deadlines, st.queue)
		}
		// The marker comes first when nobody was told.
		if err := c.Do(ctx, c.B().Publish().Channel(marker).Message("m").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		want := []string{marker + " m"}
		if st.told != "" {
			want = append([]string{k.FairChannel(st.told) + " " + script.UnlockMessage}, want...)
		}
		for _, w := range want {
			if got := next(t, heard); got != w {
				t.Fatalf("%s: heard %q, want %q", st.name, got, w)
			}
		}
	}
}

// listen pattern-subscribes to pattern and returns "CHANNEL MESSAGE" of each
// message heard, until the test ends.
func listen(t *testing.T, srv *redistest.Server, pattern string) <-chan string {
	t.Helper()
	rc := srv.Client()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan string, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = rc.Receive(ctx, rc.B().Psubscribe().Pattern(pattern).Build(), func(m rueidis.PubSubMessage) {
			select {
			case ch <- m.Channel + " " + m.Message:
			default:
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(5 * time.Second)
	for {
		if n, _ := srv.Do("PUBSUB", "NUMPAT").AsInt64(); n == 1 {
			return ch
		}
		if time.Now().After(deadline) {
			t.Fatal("not subscribed within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// next returns the next message heard, failing the test after 5s.
func next(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no message within 5s")
		return ""
	}
}
