package rw_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rw"
	"github.com/leasehold/leasehold/script"
)

// subscribe listens on channel with a plain client, as a Redisson waiter
// would, and returns the messages heard.
var subscribe = locktest.Subscribe

// next returns the next message on ch: after the action under test the test
// publishes a marker, so "no message" shows as the marker coming first.
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

// Which message each release publishes on redisson_rwlock:{NAME}, and so
// which waiters it wakes: "1" (all) when a write hold ends, "0" (one: a
// writer) when a read release frees the lock, nothing while readers remain,
// "1" when writers have announced themselves (writer preference).
func TestUnlockMessages(t *testing.T) {
	srv := redistest.Start(t)
	c, other := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	tests := []struct {
		name string
		act  func(t *testing.T, name string)
		want string
	}{
		{"read release frees the lock", func(t *testing.T, name string) {
			release(t, mustAcquire(t, rw.New(c, name).Read(), ctx))
		}, script.UnlockMessage},
		{"read release with another reader", func(t *testing.T, name string) {
			orl := mustAcquire(t, rw.New(other, name).Read(), ctx)
			release(t, mustAcquire(t, rw.New(c, name).Read(), ctx))
			t.Cleanup(func() { _ = orl.Release(context.Background()) })
		}, "marker"},
		{"inner read release", func(t *testing.T, name string) {
			rl := mustAcquire(t, rw.New(c, name).Read(), ctx)
			release(t, mustAcquire(t, rw.New(c, name).Read(), rl.Context()))
			t.Cleanup(func() { _ = rl.Release(context.Background()) })
		}, "marker"},
		{"write release", func(t *testing.T, name string) {
			release(t, mustAcquire(t, rw.New(c, name).Write(), ctx))
		}, script.WakeAllMessage},
		{"write release leaving its reads", func(t *testing.T, name string) {
			wl := mustAcquire(t, rw.New(c, name).Write(), ctx)
			rl := mustAcquire(t, rw.New(c, name).Read(), wl.Context())
			release(t, wl)
			t.Cleanup(func() { _ = rl.Release(context.Background()) })
		}, script.WakeAllMessage},
		{"read release frees the lock with a writer announced", func(t *testing.T, name string) {
			rl := mustAcquire(t, rw.New(c, name).Read(), ctx)
			at := time.Now().Add(time.Minute).UnixMilli()
			srv.Do("ZADD", script.KeysOf(name).Writers, strconv.FormatInt(at, 10), "someone:1:write")
			release(t, rl)
		}, script.WakeAllMessage},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "msg" + strconv.Itoa(i)
			ch := subscribe(t, srv, script.KeysOf(name).RWChannel)
			tt.act(t, name)
			srv.Do("PUBLISH", script.KeysOf(name).RWChannel, "marker")
			if got := next(t, ch); got != tt.want {
				t.Fatalf("message %q, want %q", got, tt.want)
			}
		})
	}
}

// A read release whose reply is lost is retried under the same request id:
// the latch answers the retry, so it does not give up a second hold.
func TestReadReleaseRetriedAfterLostReply(t *testing.T) {
	srv := redistest.Start(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	opt := srv.Option()
	opt.InitAddress = []string{proxy.Addr()}
	c := openOpt(t, opt)
	other := open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	l := rw.New(c, "retried")
	// Load the scripts first, so that the dropped reply is the release's own.
	release(t, mustAcquire(t, l.Read(), ctx))

	outer := mustAcquire(t, l.Read(), ctx)
	inner := mustAcquire(t, l.Read(), outer.Context())
	proxy.DropNextReply()
	if err := inner.Release(ctx); err != nil {
		t.Fatalf("inner Release with its reply lost: %v", err)
	}
	if proxy.Dropped() != 1 {
		t.Fatalf("the proxy dropped %d replies, want the release's", proxy.Dropped())
	}
	owner := ownerOf(t, srv, "retried", c)
	if n := hash(t, srv, "retried")[owner]; n != "1" || !exists(t, srv, script.KeysOf("retried").ReadHolds(owner)+":1") {
		t.Fatalf("after the retried inner release: count %s, hash %v", n, hash(t, srv, "retried"))
	}
	_, err := rw.New(other, "retried").Write().TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	release(t, outer)
	if exists(t, srv, "retried") {
		t.Fatal("lock left after the outer release")
	}
}
