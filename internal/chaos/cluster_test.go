package chaos

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/internal/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/quorum"
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/rw"
)

// clusterNames are lock names for the cluster: plain ones, whose derived
// keys put the name in braces, and names with a hash tag of their own, which
// derived keys keep.
var clusterNames = []string{"plain", "orders{eu}", "{user:42}:cart", "é-名"}

// badClusterNames have braces that make no hash tag: the keys Redisson's
// layout derives from them cannot share their slot (prefix:NAME is hashed
// whole, and a '}' in NAME ends the tag of prefix:{NAME} early).
var badClusterNames = []string{"a{b", "x}y", "a{}b", "}{"}

// On a Redis Cluster of three primaries every primitive works: it takes its
// lock, renews it, makes a rival wait and wakes it on release (the unlock
// message crosses the cluster bus), and every key a lock touches lies in the
// slot of its name, for plain names and names holding braces alike; Multi
// takes locks that lie on different nodes.
func TestCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	const watchdog = 900 * time.Millisecond
	c := open(t, cl.Option(), leasehold.WithWatchdog(watchdog))
	other := open(t, cl.Option(), leasehold.WithWatchdog(watchdog))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	type primitive struct {
		name        string
		lock, rival func(c *leasehold.Client, name string) lease.Locker
	}
	rl := func(c *leasehold.Client, name string) lease.Locker { return rlock.New(c, name) }
	fq := func(c *leasehold.Client, name string) lease.Locker { return fairqueue.New(c, name) }
	rd := func(c *leasehold.Client, name string) lease.Locker { return rw.New(c, name).Read() }
	wr := func(c *leasehold.Client, name string) lease.Locker { return rw.New(c, name).Write() }
	prims := []primitive{{"rlock", rl, rl}, {"fair", fq, fq}, {"rw-read", rd, wr}, {"rw-write", wr, rd}}
	for _, p := range prims {
		for _, base := range clusterNames {
			name := p.name + "-" + base
			t.Run(name, func(t *testing.T) {
				ls, err := p.lock(c, name).Acquire(ctx)
				if err != nil {
					t.Fatalf("Acquire: %v", err)
				}
				f := p.rival(other, name).AcquireAsync(ctx)
				eventually(t, 10*time.Second, "the rival waiting", func() bool { return other.Stats().Waiters == 1 })
				first := ls.Deadline()
				eventually(t, 5*time.Second, "a renewal", func() bool { return ls.Deadline().After(first) })
				slot := cl.KeySlot(name)
				keys := cl.Keys("*" + name + "*")
				if len(keys) < 2 {
					t.Errorf("keys of %q: %v, want the lock and its token counter at least", name, keys)
				}
				for _, k := range keys {
					if s := cl.KeySlot(k); s != slot {
						t.Errorf("key %q in slot %d, the lock %q in slot %d", k, s, name, slot)
					}
				}
				if err := ls.Release(ctx); err != nil {
					t.Fatalf("Release: %v", err)
				}
				rs, err := f.Result()
				if err != nil {
					t.Fatalf("rival: %v", err)
				}
				if rs.Token() <= ls.Token() {
					t.Errorf("rival's token %d not above %d", rs.Token(), ls.Token())
				}
				if err := rs.Release(ctx); err != nil {
					t.Fatalf("rival's Release: %v", err)
				}
			})
		}
	}

	// Before the guard these names made rueidis panic ("multi key command
	// with different key slots are not allowed") inside Acquire.
	for _, base := range badClusterNames {
		name := "bad-" + base
		t.Run(name, func(t *testing.T) {
			for _, p := range prims {
				l := p.lock(c, name)
				_, err := l.Acquire(ctx)
				if !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "Redis Cluster") {
					t.Errorf("%s Acquire: %v, want ErrInvalid naming Redis Cluster", p.name, err)
				}
				if _, err := l.TryAcquire(ctx); !errors.Is(err, lease.ErrInvalid) {
					t.Errorf("%s TryAcquire: %v", p.name, err)
				}
				if _, err := l.AcquireAsync(ctx).Result(); !errors.Is(err, lease.ErrInvalid) {
					t.Errorf("%s AcquireAsync: %v", p.name, err)
				}
			}
			if _, err := rlock.New(c, name).ForceRelease(ctx); !errors.Is(err, lease.ErrInvalid) {
				t.Errorf("ForceRelease: %v", err)
			}
		})
	}

	t.Run("multi across nodes", func(t *testing.T) {
		names := []string{"m-a", "m-b", "m-c{x}", "m-d"}
		nodes := map[int64]bool{}
		for _, n := range names {
			nodes[cl.KeySlot(n)*3/16384] = true // the slot ranges redis-cli gives 3 nodes
		}
		if len(nodes) < 2 {
			t.Fatalf("names %v all on one node", names)
		}
		lock := func(c *leasehold.Client) lease.Locker {
			ms := make([]lease.Locker, len(names))
			for i, n := range names {
				ms[i] = rlock.New(c, n)
			}
			return quorum.Multi(ms...)
		}
		ls, err := lock(c).Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		f := lock(other).AcquireAsync(ctx)
		eventually(t, 10*time.Second, "the rival waiting", func() bool { return other.Stats().Waiters == 1 })
		if err := ls.Release(ctx); err != nil {
			t.Fatal(err)
		}
		rs, err := f.Result()
		if err != nil {
			t.Fatal(err)
		}
		_ = rs.Release(ctx)
	})

	t.Run("WithReplicas refused", func(t *testing.T) {
		_, err := leasehold.Open(cl.Option(), leasehold.WithReplicas(1, time.Second))
		if !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "Cluster") {
			t.Fatalf("Open in cluster mode with WithReplicas: %v", err)
		}
	})
}
