package leaseholdgocron_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	leaseholdgocron "github.com/leasehold/leasehold/gocron"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
)

// Two services on one Redis, each with a job named "cleanup" and a
// scheduler electing a leader named "scheduler": with a key prefix each
// (leasehold.WithKeyPrefix on their Clients) they no longer take each
// other's locks, while the replicas of one service still exclude each
// other. Without it, the second service's "cleanup" was skipped.
func TestKeyPrefix(t *testing.T) {
	srv := redistest.Start(t)
	billing1 := locktest.Open(t, srv, leasehold.WithKeyPrefix("billing:"))
	billing2 := locktest.Open(t, srv, leasehold.WithKeyPrefix("billing:"))
	search := locktest.Open(t, srv, leasehold.WithKeyPrefix("search:"))
	ctx := locktest.Ctx(t, 10*time.Second)

	held, err := leaseholdgocron.NewLocker(billing1).Lock(ctx, "cleanup")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaseholdgocron.NewLocker(billing2).Lock(ctx, "cleanup"); !errors.Is(err, lease.ErrNotAcquired) {
		t.Errorf("a replica of the same service: %v, want ErrNotAcquired", err)
	}
	other, err := leaseholdgocron.NewLocker(search).Lock(ctx, "cleanup")
	if err != nil {
		t.Fatalf("the other service's cleanup: %v", err)
	}
	for _, l := range []interface{ Unlock(context.Context) error }{held, other} {
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}

	es := []*leaseholdgocron.Elector{
		leaseholdgocron.NewElector(billing1, "scheduler"),
		leaseholdgocron.NewElector(search, "scheduler"),
	}
	defer func() {
		for _, e := range es {
			e.Close()
		}
	}()
	locktest.Eventually(t, 5*time.Second, "each service's scheduler leads", func() bool { return len(leaders(es)) == 2 })
}
