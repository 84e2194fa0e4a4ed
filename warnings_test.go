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
