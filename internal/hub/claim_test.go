package hub_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/internal/hub"
)

// The handoff's states: a release claims the longest-waiting waiter that
// offered itself and is not trying; a claimed waiter may not try; a grant
// reaches a waiter still there, and a waiter that left while claimed makes
// Grant and Unclaim report it, so that the releaser gives the lock back.
func TestClaim(t *testing.T) {
	srv := redistest.Start(t)
	h, _ := newHub(t, srv.Addr())
	const ch = "claim-channel"
	a, err := h.Watch(ch, "claim")
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.Watch(ch, "claim")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Leave(false)
	if w, _, _, _ := h.Claim(ch); w != nil {
		t.Fatal("claimed a waiter that offered nothing")
	}
	a.Offer("owner:a", "1000")
	b.Offer("owner:b", "2000")
	select {
	case <-a.Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("not subscribed")
	}
	if !a.Begin() {
		t.Fatal("an idle waiter may not try")
	}
	// a is trying: the release takes b.
	w, owner, lease, _ := h.Claim(ch)
	if w != b || owner != "owner:b" || lease != "2000" {
		t.Fatalf("Claim = %p %q %q, want b as owner:b with 2000", w, owner, lease)
	}
	a.End()
	if b.Begin() {
		t.Fatal("a claimed waiter may try")
	}
	if !b.Grant(hub.Handoff{Token: 7}) {
		t.Fatal("Grant to a waiter still there failed")
	}
	select {
	case g := <-b.Granted():
		if g.Token != 7 {
			t.Fatalf("token %d, want 7", g.Token)
		}
	default:
		t.Fatal("no handoff received")
	}
	// Now a: claimed, then it leaves before the pass returns.
	if w, _, _, _ := h.Claim(ch); w != a {
		t.Fatalf("Claim = %p, want a", w)
	}
	a.Leave(false)
	if a.Grant(hub.Handoff{Token: 8}) || a.Unclaim() {
		t.Fatal("Grant or Unclaim reported a waiter that left as there")
	}
	if w, _, _, _ := h.Claim(ch); w != nil {
		t.Fatal("claimed again a waiter already granted, or one that left")
	}
}

// A release may pass the lock over other listeners PassOver times after
// the Client's last release that published: the count lives on the
// channel, not on its subscription, so a waiter that left and one that
// came anew do not start it again; EndPasses does, for a release sent
// after the last pass.
func TestClaimPassesOverBoundedly(t *testing.T) {
	srv := redistest.Start(t)
	h, _ := newHub(t, srv.Addr())
	const ch = "over-channel"
	claim := func(i int) (*hub.Waiter, bool) {
		t.Helper()
		w, err := h.Watch(ch, "over")
		if err != nil {
			t.Fatal(err)
		}
		w.Offer("owner:"+strconv.Itoa(i), "1000")
		select {
		case <-w.Ready():
		case <-time.After(5 * time.Second):
			t.Fatal("not subscribed")
		}
		got, _, _, over := h.Claim(ch)
		if got != w {
			t.Fatalf("claim %d: %p, want %p", i, got, w)
		}
		return w, over
	}
	for i := range hub.PassOver + 1 {
		w, over := claim(i)
		if want := i < hub.PassOver; over != want {
			t.Fatalf("claim %d: over %v, want %v", i, over, want)
		}
		if over && !w.Grant(hub.Handoff{Sent: time.Now()}) {
			t.Fatal("Grant failed")
		}
		if !over && !w.Unclaim() {
			t.Fatal("Unclaim failed")
		}
		w.Leave(false) // the topic may go: the count stays
	}
	h.EndPasses("another-channel", time.Now())
	// A release sent before the last pass: the count stays.
	h.EndPasses(ch, time.Now().Add(-time.Hour))
	w, over := claim(hub.PassOver + 1)
	if over {
		t.Fatal("another channel's release, or one sent before the passes, ended this one's count")
	}
	w.Unclaim()
	w.Leave(false)
	h.EndPasses(ch, time.Now())
	w, over = claim(hub.PassOver + 2)
	if !over {
		t.Fatal("no pass over after the Client's release published")
	}
	w.Unclaim()
	w.Leave(false)
}
