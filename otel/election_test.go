package leaseholdotel_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"

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
