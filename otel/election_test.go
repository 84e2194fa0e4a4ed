package leaseholdotel_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/election"
	"github.com/leasehold/leasehold/lease"
	leaseholdotel "github.com/leasehold/leasehold/otel"
)

// TestElectionCampaign: a campaign is seen as an acquisition and a
// resignation as a release, labelled with the lock kind "election": a
// campaign that waits for the leader's resignation, in the spans and in the
// histograms, with the term as the token.
func TestElectionCampaign(t *testing.T) {
	r := newRig(t)
	c := r.open(t, leaseholdotel.New(r.providers()...))
	other := r.open(t, nil)
	ctx := context.Background()

	first, err := election.New(other, "scheduler").Campaign(ctx, "host-0:42")
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		ls  *lease.Lease
		err error
	}
	done := make(chan result, 1)
	go func() {
		ls, err := election.New(c, "scheduler").Campaign(ctx, "host-1:42")
		done <- result{ls, err}
	}()
	eventually(t, 10*time.Second, "the campaign waits", func() bool { return c.Stats().Waiters == 1 })
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	if err := res.ls.Release(ctx); err != nil {
		t.Fatal(err)
	}

	acq, rel := r.ended("leasehold.acquire"), r.ended("leasehold.release")
	if len(acq) != 1 || len(rel) != 1 {
		t.Fatalf("%d acquire and %d release spans, want 1 each", len(acq), len(rel))
	}
	a := attrs(acq[0])
	for _, check := range []struct {
		what string
		ok   bool
	}{
		{"acquire kind", a["leasehold.lock.kind"].AsString() == "election"},
		{"acquire name", a["leasehold.lock.name"].AsString() == "scheduler"},
		{"acquire owner", a["leasehold.lock.owner"].AsString() == res.ls.Owner()},
		{"acquire token is the term", a["leasehold.lock.token"].AsInt64() == int64(res.ls.Token())},
		{"acquire outcome", a["leasehold.outcome"].AsString() == "acquired"},
		{"acquire attempts", a["leasehold.acquire.attempts"].AsInt64() >= 2},
		{"acquire status", acq[0].Status().Code == codes.Unset},
		{"release kind", attrs(rel[0])["leasehold.lock.kind"].AsString() == "election"},
		{"release outcome", attrs(rel[0])["leasehold.outcome"].AsString() == "released"},
	} {
		if !check.ok {
			t.Errorf("%s: no. acquire %v, release %v", check.what, acq[0].Attributes(), rel[0].Attributes())
		}
	}
	ms := r.metrics(t)
	if n, _, _ := hist(ms, "leasehold.acquire.duration", kind.String("election"), outcome.String("acquired")); n != 1 {
		t.Errorf("acquire.duration{election,acquired}: count %d, want 1", n)
	}
	if n, _, _ := hist(ms, "leasehold.hold.duration", kind.String("election"), outcome.String("released")); n != 1 {
		t.Errorf("hold.duration{election,released}: count %d, want 1", n)
	}
}

// gauge returns the value of the gauge point of metric name whose
// attributes are exactly kv.
func gauge(ms map[string]metricdata.Metrics, name string, kv ...attribute.KeyValue) (int64, bool) {
	want := attribute.NewSet(kv...)
	if d, ok := ms[name].Data.(metricdata.Gauge[int64]); ok {
		for _, p := range d.DataPoints {
			if p.Attributes.Equals(&want) {
				return p.Value, true
			}
		}
	}
	return 0, false
}

// TestElectionLeaderGauge: leasehold.election.leader is 1 on the Client
// that leads an election and 0 on the one that led it before, by the name
// the caller gave (not the key prefix's); a re-entered campaign changes
// nothing, and a leadership lost (the Client closed) reads 0.
func TestElectionLeaderGauge(t *testing.T) {
	const metric = "leasehold.election.leader"
	r1, r2 := newRig(t), newRig(t)
	c1 := r1.open(t, leaseholdotel.New(r1.providers()...), leasehold.WithKeyPrefix("svc:"))
	c2 := r2.open(t, leaseholdotel.New(r2.providers()...), leasehold.WithKeyPrefix("svc:"))
	ctx := context.Background()
	name := attribute.Key("leasehold.lock.name").String("scheduler")
	leads := func(r *rig) (int64, bool) { return gauge(r.metrics(t), metric, name) }

	if _, ok := leads(r1); ok {
		t.Fatal("a gauge for an election never won")
	}
	first, err := election.New(c1, "scheduler").Campaign(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := leads(r1); v != 1 || !ok {
		t.Fatalf("the leader's gauge: %v, %v; want 1", v, ok)
	}
	if _, ok := leads(r2); ok {
		t.Fatal("a gauge on the Client that never led")
	}
	f := election.New(c2, "scheduler")
	type result struct {
		ls  *lease.Lease
		err error
	}
	done := make(chan result, 1)
	go func() {
		ls, err := f.Campaign(ctx, "c2")
		done <- result{ls, err}
	}()
	eventually(t, 10*time.Second, "the campaign waits", func() bool { return c2.Stats().Waiters == 1 })
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	if v, ok := leads(r1); v != 0 || !ok {
		t.Fatalf("the former leader's gauge: %v, %v; want 0", v, ok)
	}
	inner, err := f.Campaign(res.ls.Context(), "c2")
	if err != nil {
		t.Fatal(err)
	}
	if err := inner.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _ := leads(r2); v != 1 {
		t.Fatalf("the leader's gauge after a re-entered campaign: %v; want 1", v)
	}
	c2.Close() // the leadership is lost with lease.ErrClosed
	if v, ok := leads(r2); v != 0 || !ok {
		t.Fatalf("the gauge once the leadership is lost: %v, %v; want 0", v, ok)
	}
}
