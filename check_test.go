package leasehold_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

// Check is nil while Redis answers and the leases are renewed; a renewal
// that Redis refuses for two rounds makes it report the lease by name,
// and it is nil again once renewals are confirmed, the lease kept.
func TestCheckLateRenewal(t *testing.T) {
	srv := redistest.Start(t)
	opt := locktest.Denied(t, srv) // an ACL user with every command, for now
	c := locktest.OpenAt(t, opt, leasehold.WithWatchdog(3*time.Second), leasehold.WithObserver(lease.ObserverFunc(func(lease.Event) {})))
	ctx := locktest.Ctx(t, 20*time.Second)
	if err := c.Check(ctx); err != nil {
		t.Fatalf("Check with no lease: %v", err)
	}
	ls := locktest.MustAcquire(t, rlock.New(c, "renewed"), ctx)
	if err := c.Check(ctx); err != nil {
		t.Fatalf("Check with a lease just taken: %v", err)
	}
	if err := srv.Do("ACL", "SETUSER", opt.Username, "-evalsha", "-eval").Error(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var err error
	locktest.Eventually(t, 2500*time.Millisecond, "Check reports the late renewal", func() bool {
		err = c.Check(ctx)
		return err != nil
	})
	if err := srv.Do("ACL", "SETUSER", opt.Username, "+evalsha", "+eval").Error(); err != nil {
		t.Fatal(err)
	}
	t.Logf("after %v: %v", time.Since(start).Round(time.Millisecond), err)
	if d := time.Since(start); d < 1500*time.Millisecond {
		t.Errorf("late after %v: one missed round (1s) is not late", d)
	}
	var le *lease.Error
	if !errors.As(err, &le) || le.Name != "renewed" || !strings.HasPrefix(err.Error(), "leasehold: check: 1 of 1 leases not renewed in time") {
		t.Fatalf("Check = %v; want a *lease.Error naming the lock", err)
	}
	locktest.Eventually(t, 2*time.Second, "Check nil once renewals are confirmed again", func() bool { return c.Check(ctx) == nil })
	if locktest.IsLost(ls) {
		t.Fatalf("the lease was lost: %v", ls.Err())
	}
	locktest.Release(t, ls)
}

// Check reports a Redis that does not answer (with ctx's error) and a
// closed Client.
func TestCheckRedisAndClose(t *testing.T) {
	srv := redistest.Start(t)
	c, err := leasehold.Open(srv.Option(), leasehold.WithObserver(lease.ObserverFunc(func(lease.Event) {})))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv.Pause()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	err = c.Check(ctx)
	cancel()
	srv.Resume()
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "leasehold: check: Redis does not answer PING") {
		t.Errorf("Check with Redis paused = %v; want the PING's deadline", err)
	}
	if err := c.Check(context.Background()); err != nil {
		t.Errorf("Check once Redis answers again: %v", err)
	}
	c.Close()
	if err := c.Check(context.Background()); !errors.Is(err, lease.ErrClosed) {
		t.Errorf("Check after Close = %v; want lease.ErrClosed", err)
	}
}
