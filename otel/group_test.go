package leaseholdotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/lease"
	leaseholdotel "github.com/leasehold/leasehold/otel"
	"github.com/leasehold/leasehold/partition"
)

// member runs g in a goroutine, its fns holding their partitions until
// their ctx ends; stop ends Run and returns its error. It is stopped when
// the test ends.
func member(t *testing.T, g *partition.Group) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- g.Run(ctx, func(ctx context.Context, _ int) error {
			<-ctx.Done()
			return nil
		})
	}()
	var err error
	stopped := false
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return within 10s")
			}
		}
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// TestRegisterGroup reads a member's view of its group at each collection,
// by group name: what it owns and is assigned, the members it sees, the
// rebalances it acted on; those of two members in one process add up (but
// the members), and unregister stops it.
func TestRegisterGroup(t *testing.T) {
	const n = 8
	r1, r2, both := newRig(t), newRig(t), newRig(t)
	g1 := partition.New(r1.open(t, nil), "ingest", n)
	g2 := partition.New(r2.open(t, nil, leasehold.WithKeyPrefix("svc:")), "ingest", n)
	var unregister []func() error
	for _, reg := range []struct {
		r *rig
		g *partition.Group
	}{{r1, g1}, {r2, g2}, {both, g1}, {both, g2}} {
		u, err := leaseholdotel.RegisterGroup(reg.g, leaseholdotel.WithMeterProvider(reg.r.mp))
		if err != nil {
			t.Fatal(err)
		}
		unregister = append(unregister, u)
	}
	group := attribute.Key("leasehold.partition.group").String("ingest") // as given, not svc:ingest
	type view struct{ owned, assigned, members, rebalances int64 }
	read := func(r *rig) view {
		ms := r.metrics(t)
		var v view
		v.owned, _ = sum(ms, "leasehold.partition.owned", group)
		v.assigned, _ = sum(ms, "leasehold.partition.assigned", group)
		v.members, _ = gauge(ms, "leasehold.partition.members", group)
		v.rebalances, _ = sum(ms, "leasehold.partition.rebalances", group)
		return v
	}
	if v := read(r1); v != (view{}) {
		t.Fatalf("before Run: %+v, want zeros", v)
	}

	// Two groups: g1 and g2 are members of different groups (g2's Client
	// has a key prefix), each alone in its own, both named "ingest".
	stop1, stop2 := member(t, g1), member(t, g2)
	eventually(t, 10*time.Second, "each runs its group's 8", func() bool {
		return len(g1.Owned()) == n && len(g2.Owned()) == n
	})
	for name, r := range map[string]*rig{"r1": r1, "r2": r2} {
		if v := read(r); v.owned != n || v.assigned != n || v.members != 1 || v.rebalances < 1 {
			t.Errorf("%s alone: %+v, want %d owned and assigned, 1 member, a rebalance or more", name, v, n)
		}
	}
	// On one provider, the two members' counts add up.
	if v := read(both); v.owned != 2*n || v.assigned != 2*n || v.members != 1 || v.rebalances < 2 {
		t.Errorf("both on one provider: %+v, want %d owned and assigned, 1 member, 2 rebalances or more", v, 2*n)
	}

	// A second member of g1's group: g1 gives half away and acts on a
	// rebalance more.
	before := read(r1).rebalances
	g3 := partition.New(r1.open(t, nil), "ingest", n)
	stop3 := member(t, g3)
	eventually(t, 10*time.Second, "g1 and g3 run 4 each", func() bool {
		return len(g1.Owned()) == n/2 && len(g3.Owned()) == n/2
	})
	eventually(t, 10*time.Second, "g1 sees the second member", func() bool {
		v := read(r1)
		return v.owned == n/2 && v.assigned == n/2 && v.members == 2 && v.rebalances > before
	})

	// g1's Run ends: it reports nothing owned, no membership.
	if err := stop1(); err != nil {
		t.Fatal(err)
	}
	if v := read(r1); v.owned != 0 || v.assigned != 0 || v.members != 0 {
		t.Errorf("once Run returned: %+v, want 0 owned, assigned, members", v)
	}
	if err := errors.Join(stop2(), stop3()); err != nil {
		t.Fatal(err)
	}
	for _, u := range unregister {
		if err := u(); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := sum(r1.metrics(t), "leasehold.partition.owned", group); ok {
		t.Error("leasehold.partition.owned after unregister, want no point")
	}
}

func TestRegisterNilGroup(t *testing.T) {
	if _, err := leaseholdotel.RegisterGroup(nil); !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("RegisterGroup(nil): %v, want ErrInvalid", err)
	}
}
