package hub_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/internal/hub"
	"github.com/leasehold/leasehold/script"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newHub returns a hub on its own rueidis client (one connection) to addr,
// with invalidations wired; both close when the test ends.
func newHub(t *testing.T, addr string) (*hub.Hub, rueidis.Client) {
	t.Helper()
	var h *hub.Hub
	ready := make(chan struct{})
	rc, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:       []string{addr},
		PipelineMultiplex: -1,
		ConnWriteTimeout:  2 * time.Second,
		OnInvalidations: func(keys []rueidis.RedisMessage) {
			select {
			case <-ready:
				h.Invalidate(keys)
			default:
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h = hub.NewHub(rc, hub.Tracking())
	close(ready)
	t.Cleanup(func() { h.Close(context.Background()); rc.Close() })
	return h, rc
}

func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func numsub(srv *redistest.Server, channel string) int64 {
	v, err := srv.Do("PUBSUB", "NUMSUB", channel).ToArray()
	if err != nil || len(v) != 2 {
		return -1
	}
	n, _ := v[1].AsInt64()
	return n
}

func watchReady(t *testing.T, h *hub.Hub, channel, key string) *hub.Waiter {
	t.Helper()
	w, err := h.Watch(channel, key)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("subscription never confirmed")
	}
	return w
}

func woken(w *hub.Waiter, within time.Duration) bool {
	select {
	case <-w.C():
		return true
	case <-time.After(within):
		return false
	}
}

// Many waiters on one channel share one subscription, dropped with the last.
func TestOneSubscriptionPerChannel(t *testing.T) {
	srv := redistest.Start(t)
	h, _ := newHub(t, srv.Addr())
	var ws []*hub.Waiter
	for i := 0; i < 50; i++ {
		ws = append(ws, watchReady(t, h, "ch", "k"))
	}
	if n := numsub(srv, "ch"); n != 1 {
		t.Fatalf("PUBSUB NUMSUB ch = %d with 50 waiters, want 1", n)
	}
	if s := h.Stats(); s.Subscriptions != 1 || s.Waiters != 50 {
		t.Fatalf("Stats = %+v", s)
	}
	for _, w := range ws {
		w.Leave(false)
	}
	eventually(t, 5*time.Second, "subscription dropped", func() bool { return numsub(srv, "ch") == 0 })
	if s := h.Stats(); s.Subscriptions != 0 || s.Waiters != 0 {
		t.Fatalf("Stats after all left = %+v", s)
	}
}

// A message wakes one waiter, the longest waiting; "1" wakes them all.
func TestWakeOneAndAll(t *testing.T) {
	srv := redistest.Start(t)
	h, _ := newHub(t, srv.Addr())
	ws := []*hub.Waiter{watchReady(t, h, "ch", ""), watchReady(t, h, "ch", ""), watchReady(t, h, "ch", "")}
	defer func() {
		for _, w := range ws {
			w.Leave(false)
		}
	}()
	srv.Do("PUBLISH", "ch", "0")
	if !woken(ws[0], 5*time.Second) {
		t.Fatal("the oldest waiter was not woken")
	}
	for _, w := range ws[1:] {
		if woken(w, 50*time.Millisecond) {
			t.Fatal("one message woke more than one waiter")
		}
	}
	srv.Do("PUBLISH", "ch", script.WakeAllMessage)
	for i, w := range ws {
		if !woken(w, 5*time.Second) {
			t.Fatalf("waiter %d not woken by the wake-all message", i)
		}
	}
}

// A waiter that leaves with a wake-up it did not act on hands it on: a
// release is never lost to a waiter that gave up.
func TestLeaveHandsWakeOn(t *testing.T) {
	srv := redistest.Start(t)
	h, _ := newHub(t, srv.Addr())
	a, b := watchReady(t, h, "ch", ""), watchReady(t, h, "ch", "")
	defer b.Leave(false)
	srv.Do("PUBLISH", "ch", "0")
	eventually(t, 5*time.Second, "a wake-up delivered", func() bool { return h.Stats().Wakeups == 1 })
	a.Leave(false) // without receiving it
	if !woken(b, 5*time.Second) {
		t.Fatal("the wake-up was lost with the waiter that left")
	}
}

// After the connection is cut, every waiter is woken (a release may have
// gone unheard) and the subscription comes back.
func TestResubscribeAfterCut(t *testing.T) {
	srv := redistest.Start(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	h, _ := newHub(t, proxy.Addr())
	w := watchReady(t, h, "ch", "")
	defer w.Leave(false)
	proxy.Cut()
	if !woken(w, 5*time.Second) {
		t.Fatal("waiter not woken when its subscription's connection broke")
	}
	eventually(t, 10*time.Second, "subscribed again", func() bool { return numsub(srv, "ch") == 1 })
	for woken(w, 10*time.Millisecond) { // drain the wake-up of the resubscription
	}
	srv.Do("PUBLISH", "ch", "0")
	if !woken(w, 5*time.Second) {
		t.Fatal("no wake-up from a message after resubscribing")
	}
}

// A subscription that outlives many breaks comes back as fast after the
// last as after the first. rueidis, left to subscribe again by itself, waits
// longer before each of its tries in one Receive, to a second after twenty:
// an old subscription would then be gone for a second after every break of a
// flapping connection (one that Redis drops for its output buffer, say), and
// its waiters would hear no release all that time.
func TestResubscribeAfterManyCuts(t *testing.T) {
	srv := redistest.Start(t)
	h, _ := newHub(t, srv.Addr())
	w := watchReady(t, h, "ch", "")
	defer w.Leave(false)
	const cuts, late = 25, 400 * time.Millisecond // rueidis' 20th try waits 1s
	var slowest time.Duration
	for i := range cuts {
		if n, err := srv.Do("CLIENT", "KILL", "TYPE", "pubsub").AsInt64(); err != nil || n != 1 {
			t.Fatalf("cut %d: CLIENT KILL TYPE pubsub = %d, %v; want 1 connection killed", i, n, err)
		}
		cut := time.Now()
		eventually(t, 10*time.Second, "subscribed again", func() bool { return numsub(srv, "ch") == 1 })
		if took := time.Since(cut); i >= cuts-5 {
			slowest = max(slowest, took)
		}
	}
	if slowest > late {
		t.Fatalf("after %d cuts, subscribing again took up to %v, want under %v", cuts, slowest, late)
	}
	for woken(w, 10*time.Millisecond) { // drain the wake-ups of the cuts
	}
	srv.Do("PUBLISH", "ch", "0")
	if !woken(w, 5*time.Second) {
		t.Fatal("no wake-up from a message after the cuts")
	}
}

// A change of a tracked lock key wakes a waiter, with no message at all.
func TestInvalidationWakes(t *testing.T) {
	srv := redistest.Start(t)
	h, _ := newHub(t, srv.Addr())
	// A lock's hash and a semaphore's string: Track reads either.
	for key, set := range map[string][]string{
		"lockkey": {"HSET", "lockkey", "owner", "1"},
		"semkey":  {"SET", "semkey", "3"},
	} {
		srv.Do(set...)
		w := watchReady(t, h, "ch-"+key, key)
		if err := w.Track(context.Background()); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		srv.Do("DEL", key)
		if !woken(w, 5*time.Second) {
			t.Fatalf("no wake-up from the invalidation of %s", key)
		}
		w.Leave(false)
	}
}

// A Tracker's reader is handed a waiter's key once while it is waited on,
// and told to forget it when the last waiter leaves, not before: a read of
// it made after that, once the key is gone for good, would stay in Redis'
// tracking table. The next waiter has it read again.
func TestTrackerForgetsWithLastWaiter(t *testing.T) {
	srv := redistest.Start(t)
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var mu sync.Mutex
	var calls []string
	note := func(what string) func(string) {
		return func(key string) { mu.Lock(); calls = append(calls, what+" "+key); mu.Unlock() }
	}
	want := func(step string, w ...string) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(calls, w) {
			t.Fatalf("%s: calls %q, want %q", step, calls, w)
		}
	}
	h := hub.NewHub(rc, hub.Tracker(note("read"), note("forget")))
	defer h.Close(context.Background())
	ctx := context.Background()
	a, b := watchReady(t, h, "ch", "k"), watchReady(t, h, "ch", "k")
	for _, w := range []*hub.Waiter{a, b} {
		if err := w.Track(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want("two waiters", "read k")
	a.Leave(false)
	want("one left", "read k")
	b.Leave(false)
	want("both left", "read k", "forget k")
	c := watchReady(t, h, "ch", "k")
	if err := c.Track(ctx); err != nil {
		t.Fatal(err)
	}
	c.Leave(false)
	want("the next waiter", "read k", "forget k", "read k", "forget k")
}

func TestWatchAfterClose(t *testing.T) {
	srv := redistest.Start(t)
	h, _ := newHub(t, srv.Addr())
	w := watchReady(t, h, "ch", "")
	h.Close(context.Background())
	if !woken(w, time.Second) {
		t.Fatal("Close did not wake a registered waiter")
	}
	w.Leave(false)
	if _, err := h.Watch("ch", ""); err != hub.ErrClosed {
		t.Fatalf("Watch after Close = %v, want ErrClosed", err)
	}
}

// On a counted channel (a semaphore's: each message is the permits
// available) a message N wakes waiters whose weights add up to at most N,
// heaviest first and the longest waiting first among equals, passing over a
// waiter that does not fit; a waiter already woken is not counted. So a
// release wakes as many waiters as permits came free, not one, not all; "1"
// wakes one waiter there, not every waiter; 0 wakes none.
func TestCountedWakesByWeight(t *testing.T) {
	srv := redistest.Start(t)
	h, _ := newHub(t, srv.Addr())
	names := []string{"a", "b", "c", "d"} // oldest first
	weights := []int{1, 3, 1, 2}
	ws := map[string]*hub.Waiter{}
	for i, name := range names {
		w, err := h.Watch("sc", "", hub.Counted(weights[i]))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Leave(false)
		<-w.Ready()
		ws[name] = w
	}
	// publish sends msg and returns the waiters it woke, in name order.
	publish := func(msg string, want int) string {
		t.Helper()
		before := h.Stats().Wakeups
		srv.Do("PUBLISH", "sc", msg)
		if want == 0 {
			time.Sleep(100 * time.Millisecond) // time enough for a wrong wake-up to show
		}
		eventually(t, 5*time.Second, "wake-ups delivered", func() bool { return h.Stats().Wakeups >= before+uint64(want) })
		got := ""
		for _, name := range names {
			if woken(ws[name], 20*time.Millisecond) {
				got += name
			}
		}
		return got
	}
	for _, st := range []struct{ msg, want string }{
		{"3", "b"},    // the heaviest fits exactly
		{"2", "d"},    // b (3) does not fit: passed over
		{"4", "ab"},   // b, then 1 left: the oldest of weight 1
		{"5", "bd"},   // 3 + 2: nothing left for the 1s
		{"7", "abcd"}, // all
		{"1", "a"},    // one of weight 1, not every waiter
		{"0", ""},     // nothing available: nobody
		{"-2", ""},    // below zero (permits taken away): nobody
		{"x", "a"},    // not a count: one, the longest waiting
	} {
		if got := publish(st.msg, len(st.want)); got != st.want {
			t.Fatalf("message %q woke %q, want %q", st.msg, got, st.want)
		}
	}
	// A waiter woken already, and not yet trying, is not counted: b's
	// wake-up from the first "3" is pending when the second comes.
	before := h.Stats().Wakeups
	srv.Do("PUBLISH", "sc", "3")
	eventually(t, 5*time.Second, "b woken", func() bool { return h.Stats().Wakeups == before+1 })
	if got := publish("3", 2); got != "abd" {
		t.Fatalf("with b's wake-up pending, message \"3\" left %q woken, want \"abd\"", got)
	}
}

// A mark tells a late waiter whether it may have missed a wake-up: always
// when the channel was not subscribed at the mark, never on a silent
// subscribed channel, and after any message or invalidation since.
func TestMarkMissed(t *testing.T) {
	srv := redistest.Start(t)
	h, rc := newHub(t, srv.Addr())
	ctx := context.Background()

	early := h.Mark("ch") // not subscribed yet
	first := watchReady(t, h, "ch", "k")
	defer first.Leave(false)
	if w := watch(t, h, "ch", "k"); !w.Missed(early) {
		t.Error("a mark taken before the subscription reports nothing missed")
	} else {
		w.Leave(false)
	}

	quiet := h.Mark("ch")
	w := watch(t, h, "ch", "k")
	if w.Missed(quiet) {
		t.Error("a silent subscribed channel reports a missed wake-up")
	}
	w.Leave(false)

	// A message on the channel, an invalidation of its lock key: either
	// wakes a waiter, and a later waiter has missed it.
	if err := rc.DoCache(ctx, rc.B().Hlen().Key("k").Cache(), time.Minute).Error(); err != nil {
		t.Fatal(err)
	}
	for _, wake := range []struct {
		what  string
		cause func() error
	}{
		{"a message", func() error { return rc.Do(ctx, rc.B().Publish().Channel("ch").Message("0").Build()).Error() }},
		{"an invalidation", func() error { return srv.Do("HSET", "k", "f", "1").Error() }},
	} {
		m := h.Mark("ch")
		if err := wake.cause(); err != nil {
			t.Fatal(err)
		}
		if !woken(first, 5*time.Second) {
			t.Fatalf("%s never arrived", wake.what)
		}
		w = watch(t, h, "ch", "k")
		if !w.Missed(m) {
			t.Errorf("%s after the mark reports nothing missed", wake.what)
		}
		w.Leave(false)
	}

	// A mark is of one channel.
	other := watchReady(t, h, "other", "")
	defer other.Leave(false)
	w = watch(t, h, "ch", "k")
	if !w.Missed(h.Mark("other")) {
		t.Error("a mark of another channel reports nothing missed")
	}
	w.Leave(false)
}

func watch(t *testing.T, h *hub.Hub, channel, key string) *hub.Waiter {
	t.Helper()
	w, err := h.Watch(channel, key)
	if err != nil {
		t.Fatal(err)
	}
	return w
}
