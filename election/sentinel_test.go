package election_test

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/election"
	"github.com/leasehold/leasehold/internal/harness/redistest"
)

// Under Sentinel an election runs as the locks do: Clients reach the primary
// through the Sentinels, and after a failover (SENTINEL FAILOVER) the leader
// resigns on the new primary, the next campaigner leads in a later term, and
// an observer goes from the old term to the new, never back.
func TestSentinelFailover(t *testing.T) {
	sn := redistest.StartSentinel(t)
	opts := []leasehold.Option{leasehold.WithWatchdog(2 * time.Second)}
	leader, other, watcher := openAt(t, sn.Option(), opts...), openAt(t, sn.Option(), opts...), openAt(t, sn.Option(), opts...)
	ctx := ctxTimeout(t, time.Minute)
	obs := election.New(watcher, "sentinel").Observe(ctx)

	la := campaign(t, election.New(leader, "sentinel"), ctx, "a")
	if got := next(t, obs, 10*time.Second); got != of(la, "a") {
		t.Fatalf("observed %+v, want %+v", got, of(la, "a"))
	}
	ch := campaignAsync(t, election.New(other, "sentinel"), ctx, "b")
	old := sn.Failover()
	sn.AwaitPrimary(old, 30*time.Second)
	// The term may have ended with the failover (a renewal that reached the
	// old primary last); then resigning finds it over, which is fine.
	_ = la.Release(ctx)
	lb := won(t, ch, 30*time.Second)
	if lb.Token() <= la.Token() {
		t.Fatalf("term %d after term %d across the failover", lb.Token(), la.Token())
	}
	observeTerm(t, obs, la, lb, "b")
	release(t, lb)
}
