package leasehold_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/rlock"
)

// Every warning a Client gives reads "leasehold: ..." once: the warnings
// of Open (memory policy, PUBLISH refused, CLIENT TRACKING refused) and of
// a refused SUBSCRIBE. The test kit printed "leasehold: leasehold: CLIENT
// TRACKING unavailable" when one layer added the prefix the warning had.
func TestWarningsPrefixedOnce(t *testing.T) {
	srv := redistest.Start(t, "--maxmemory", "100mb", "--maxmemory-policy", "volatile-lru")
	var w warnings
	denied := []string{"publish", "subscribe", "client|tracking"}
	want := []string{"maxmemory-policy", "PUBLISH is refused", "CLIENT TRACKING unavailable", "subscribing to unlock messages is refused"}
	if name, major := redistest.Version(); name == "redis" && major < 7 {
		// Redis 6.2's ACL cannot take one subcommand away.
		denied, want = denied[:2], slices.DeleteFunc(want, func(s string) bool { return strings.HasPrefix(s, "CLIENT") })
	}
	opt := locktest.Denied(t, srv, denied...)
	opt.DisableCache = true // rueidis' cache turns CLIENT TRACKING on at every connection
	c := locktest.OpenAt(t, opt, leasehold.WithObserver(&w))
	ctx := locktest.Ctx(t, 10*time.Second)
	ls := locktest.MustAcquire(t, rlock.New(c, "warned"), ctx)
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, _ = rlock.New(c, "warned").Acquire(wctx) // subscribes, refused
	cancel()
	locktest.Release(t, ls)
	ws := w.list()
	for _, s := range want {
		found := false
		for _, err := range ws {
			found = found || strings.Contains(err.Error(), s)
		}
		if !found {
			t.Errorf("no warning of %q among %v", s, ws)
		}
	}
	for _, err := range ws {
		if msg := err.Error(); !strings.HasPrefix(msg, "leasehold: ") || strings.Count(msg, "leasehold:") != 1 {
			t.Errorf("warning %q: want one \"leasehold: \" prefix", msg)
		}
	}
}

// Where no unlock message can arrive (an ACL user with Redis 7's default of
// no channels, and no CLIENT TRACKING), a waiter still takes a released
// lock within a second or so (it tries again as the hub retries the refused
// subscription: 4-78ms after the release here), not at the end of the
// holder's lease (30s); and the Client warned of what it cannot hear.
func TestWaiterWithoutMessagesOrTracking(t *testing.T) {
	if name, major := redistest.Version(); name == "redis" && major < 7 {
		t.Skip("Redis 6.2's ACL cannot take CLIENT TRACKING alone away")
	}
	srv := redistest.Start(t)
	if err := srv.Do("ACL", "SETUSER", "nochannels", "reset", "resetchannels", "on", ">pw", "~*", "+@all", "-client|tracking").Error(); err != nil {
		t.Fatal(err)
	}
	opt := srv.Option()
	opt.Username, opt.Password, opt.DisableCache = "nochannels", "pw", true
	var w warnings
	holder, waiter := locktest.OpenAt(t, opt, leasehold.WithObserver(&w)), locktest.OpenAt(t, opt, leasehold.WithObserver(&w))
	ctx := locktest.Ctx(t, 20*time.Second)
	ls := locktest.MustAcquire(t, rlock.New(holder, "silent"), ctx)
	f := rlock.New(waiter, "silent").AcquireAsync(ctx)
	locktest.Eventually(t, 5*time.Second, "the waiter waits", func() bool { return waiter.Stats().Waiters == 1 })
	time.Sleep(100 * time.Millisecond) // its first subscription refused
	released := time.Now()
	locktest.Release(t, ls)
	locktest.Release(t, locktest.Result(t, f, 5*time.Second))
	took := time.Since(released)
	t.Logf("the waiter took the lock %v after its release", took.Round(time.Millisecond))
	if took > 3*time.Second {
		t.Errorf("the waiter took the lock %v after its release; want about a second", took)
	}
	var said []string
	for _, err := range w.list() {
		said = append(said, err.Error())
	}
	for _, want := range []string{"PUBLISH is refused", "CLIENT TRACKING unavailable", "subscribing to unlock messages is refused"} {
		if !slices.ContainsFunc(said, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("no warning of %q among %q", want, said)
		}
	}
}
