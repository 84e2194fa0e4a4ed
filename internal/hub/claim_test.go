package hub_test

import (
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
	if w, _, _ := h.Claim(ch); w != nil {
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
	w, owner, lease := h.Claim(ch)
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
	if w, _, _ := h.Claim(ch); w != a {
		t.Fatalf("Claim = %p, want a", w)
	}
	a.Leave(false)
	if a.Grant(hub.Handoff{Token: 8}) || a.Unclaim() {
		t.Fatal("Grant or Unclaim reported a waiter that left as there")
	}
	if w, _, _ := h.Claim(ch); w != nil {
		t.Fatal("claimed again a waiter already granted, or one that left")
	}
}
