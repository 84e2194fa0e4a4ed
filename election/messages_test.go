package election_test

import (
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/election"
	"github.com/leasehold/leasehold/internal/harness/redistest"
)

// Observers and campaigners are woken by messages alone when no
// invalidation reaches them (Clients made by leasehold.New) and no timer can
// explain a prompt wake-up (30s leases): on a single Redis, and in Redis
// Cluster, where every key of an election lies in its name's slot and the
// scripts publish with SPUBLISH, which only sharded subscriptions hear.
// Renewals keep a leader across many short leases there too.
func TestMessagesAlone(t *testing.T) {
	t.Run("single", func(t *testing.T) { messagesAlone(t, redistest.Start(t).Option()) })
	t.Run("cluster", func(t *testing.T) { messagesAlone(t, redistest.StartCluster(t, 3).Option()) })
}

func messagesAlone(t *testing.T, opt rueidis.ClientOption) {
	ctx := ctxTimeout(t, 60*time.Second)
	untracked := func() *leasehold.Client {
		rc, err := rueidis.NewClient(opt)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(rc.Close)
		c, err := leasehold.New(rc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, b, w := untracked(), untracked(), untracked()
	for _, name := range []string{"msg", "{msg}:tagged", "a{b}c"} {
		obs := election.New(w, name).Observe(ctx)
		ea := election.New(a, name)
		la := campaign(t, ea, ctx, "a1")
		if got := next(t, obs, 5*time.Second); got != of(la, "a1") {
			t.Fatalf("%s: observed %+v, want %+v", name, got, of(la, "a1"))
		}
		if err := ea.Proclaim(ctx, "a2"); err != nil {
			t.Fatal(err)
		}
		if got := next(t, obs, 5*time.Second); got != of(la, "a2") {
			t.Fatalf("%s: after Proclaim observed %+v, want %+v", name, got, of(la, "a2"))
		}
		ch := campaignAsync(t, election.New(b, name), ctx, "b")
		eventually(t, 5*time.Second, "campaigner waiting", func() bool { return b.Stats().Waiters == 1 })
		release(t, la)
		lb := won(t, ch, 5*time.Second)
		observeTerm(t, obs, la, lb, "b")
		release(t, lb)
		if got := next(t, obs, 5*time.Second); got != (election.Leader{Token: lb.Token()}) {
			t.Fatalf("%s: after the last resignation observed %+v", name, got)
		}
	}

	short := openAt(t, opt, leasehold.WithWatchdog(300*time.Millisecond))
	e := election.New(short, "renewed")
	ls := campaign(t, e, ctx, "v")
	time.Sleep(time.Second) // three leases and more: renewed, or lost
	if got, err := e.Leader(ctx); err != nil || got != of(ls, "v") || isLost(ls) {
		t.Fatalf("after three leases: Leader %+v, %v (lost: %v)", got, err, isLost(ls))
	}
	release(t, ls)
}
