package chaos

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

// replicated starts a primary and a replica of it on loopback, the
// replication link through a proxy (to slow or cut it), and waits until the
// replica is in sync.
func replicated(t *testing.T) (primary, replica *redistest.Server, link *redistest.Proxy) {
	t.Helper()
	// Without the default 5s wait for more replicas before a diskless sync.
	primary = redistest.Start(t, "--repl-diskless-sync-delay", "0")
	link = redistest.NewProxy(t, primary.Addr())
	host, port, _ := strings.Cut(link.Addr(), ":")
	replica = redistest.Start(t, "--replicaof", host, port)
	eventually(t, 20*time.Second, "the replica in sync", func() bool {
		info, _ := replica.Do("INFO", "replication").ToString()
		return strings.Contains(info, "master_link_status:up")
	})
	// After a diskless sync the primary streams writes to the replica, and
	// asks it for acknowledgements, only once the replica has sent its first
	// (it does so once a second): until then a WAIT lasts up to a second.
	// Wait for that here, not in the tests.
	rc := primary.Client()
	eventually(t, 20*time.Second, "the replica acknowledging", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res := rc.DoMulti(ctx, rc.B().Set().Key("warm-up").Value("1").Build(), rc.B().Wait().Numreplicas(1).Timeout(100).Build())
		n, err := res[1].AsInt64()
		return err == nil && n == 1
	})
	return primary, replica, link
}

// promote makes the replica a primary (REPLICAOF NO ONE): a failover.
func promote(t *testing.T, replica *redistest.Server) {
	t.Helper()
	if err := replica.Do("REPLICAOF", "NO", "ONE").Error(); err != nil {
		t.Fatal(err)
	}
	totals.fault("replica promoted after acquire", 1)
}

// Master-replica Redis replicates asynchronously: a lock taken on the primary
// and not yet on its replica is lost when the replica is promoted, and
// another owner takes it there while the first still holds it (the seed
// problem of RedLock's design). The replication link is slowed to 300ms each
// way so that the promotion surely comes first. With WithReplicas(1, ...),
// every acquisition waits until the replica acknowledges it (WAIT), so the
// promoted replica holds the lock and the other owner is refused; if no
// replica acknowledges in time the acquisition is released and fails with
// ErrNotReplicated; and a holder whose renewals no replica acknowledges is
// not renewed: its lease is lost at its deadline.
func TestReplicaFailover(t *testing.T) {
	const watchdog = 3 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	t.Run("without WAIT the promoted replica lost the lock", func(t *testing.T) {
		primary, replica, link := replicated(t)
		link.Delay(300 * time.Millisecond)
		c := open(t, primary.Option(), leasehold.WithWatchdog(watchdog))
		ls, err := rlock.New(c, "failover").Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		promote(t, replica)
		other := open(t, replica.Option(), leasehold.WithWatchdog(watchdog))
		rival, err := rlock.New(other, "failover").TryAcquire(ctx)
		if err != nil {
			t.Fatalf("the promoted replica refused the rival (%v): the lock was replicated after all", err)
		}
		t.Logf("two owners: token %d on the old primary and token %d on the promoted replica", ls.Token(), rival.Token())
		_ = rival.Release(ctx)
		_ = ls.Release(ctx)
	})

	t.Run("with WAIT the promoted replica holds the lock", func(t *testing.T) {
		primary, replica, link := replicated(t)
		link.Delay(300 * time.Millisecond)
		c := open(t, primary.Option(), leasehold.WithWatchdog(watchdog), leasehold.WithReplicas(1, 5*time.Second))
		start := time.Now()
		ls, err := rlock.New(c, "failover").Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		promote(t, replica)
		other := open(t, replica.Option(), leasehold.WithWatchdog(watchdog))
		_, err = rlock.New(other, "failover").TryAcquire(ctx)
		if !errors.Is(err, lease.ErrNotAcquired) {
			t.Fatalf("TryAcquire on the promoted replica: %v, want ErrNotAcquired", err)
		}
		t.Logf("acquisition took %v (the WAIT for the replica over a 600ms round trip); the promoted replica refused the rival", took.Round(time.Millisecond))
		_ = ls.Release(ctx)
	})

	t.Run("no replica acknowledges: released, ErrNotReplicated", func(t *testing.T) {
		primary, _, link := replicated(t)
		link.Refuse(true)
		link.Cut()
		c := open(t, primary.Option(), leasehold.WithWatchdog(watchdog), leasehold.WithReplicas(1, 200*time.Millisecond))
		_, err := rlock.New(c, "unsynced").Acquire(ctx)
		if !errors.Is(err, lease.ErrNotReplicated) || !errors.Is(err, lease.ErrNotAcquired) {
			t.Fatalf("Acquire = %v, want ErrNotReplicated and ErrNotAcquired", err)
		}
		t.Logf("error: %v", err)
		// It is released in the background, so that Acquire returns by its
		// deadline.
		eventually(t, 10*time.Second, "the unacknowledged acquisition released", func() bool {
			n, _ := primary.Do("EXISTS", "unsynced").AsInt64()
			return n == 0
		})
	})

	t.Run("renewals no replica acknowledges do not renew", func(t *testing.T) {
		primary, _, link := replicated(t)
		const short = 900 * time.Millisecond
		// 1s: a loaded machine under -race may take 100ms to ask the replica and
		// hear back; a round whose WAIT times out waits that long, then fails.
		c := open(t, primary.Option(), leasehold.WithWatchdog(short), leasehold.WithReplicas(1, time.Second))
		ls, err := rlock.New(c, "renewed").Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Renewals are acknowledged while the replica is linked.
		first := ls.Deadline()
		eventually(t, 5*time.Second, "a renewal", func() bool { return ls.Deadline().After(first) })
		link.Refuse(true)
		link.Cut()
		cut := time.Now()
		select {
		case <-ls.Lost():
		case <-time.After(short + 2*time.Second):
			t.Fatalf("lease not lost %v after the replica went away", short+2*time.Second)
		}
		t.Logf("lost %v after the replica went away (lease %v): %v", time.Since(cut).Round(time.Millisecond), short, ls.Err())
		if n, _ := primary.Do("EXISTS", "renewed").AsInt64(); n == 0 {
			t.Log("(the lock had run out on the primary too)")
		}
	})
}
