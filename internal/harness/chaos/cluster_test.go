package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/internal/harness/redistest"
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

	// WAIT runs on the node of the lock's slot; with no replica there, no
	// acquisition is confirmed, and none is left held.
	t.Run("WithReplicas without replicas", func(t *testing.T) {
		rc := open(t, cl.Option(), leasehold.WithReplicas(1, 100*time.Millisecond))
		_, err := rlock.New(rc, "replicated{x}").Acquire(ctx)
		if !errors.Is(err, lease.ErrNotReplicated) || !strings.Contains(err.Error(), "0 of 1") {
			t.Fatalf("Acquire with WithReplicas(1) on primaries without replicas: %v, want ErrNotReplicated", err)
		}
		// It is released in the background, so that Acquire returns by its
		// deadline.
		eventually(t, 10*time.Second, "the unacknowledged acquisition released", func() bool {
			return len(cl.Keys("replicated{x}")) == 0
		})
	})
}

// clusterFaults are the ways the primary of a slot goes in a cluster with
// replicas, each counted under its name in the figures.
var clusterFaults = []struct {
	name string
	kill bool // kill -9, then the node rejoins, empty, as a replica
}{
	{"cluster failover (CLUSTER FAILOVER)", false},
	{"cluster failover (kill -9 primary)", true},
}

// Worker processes contend for locks whose slot lives on one primary of a
// 3-primary cluster with one replica each, while that primary fails over:
// CLUSTER FAILOVER on its replica (graceful: the replica catches up before it
// takes over), then kill -9 of the primary (its replica is promoted 2-3s
// later; the killed node then rejoins, empty, as a replica of the new one).
// Over kill -9 holders lose their leases (longer than the lease), and a lock
// taken in the last moment before the kill may not have reached the replica;
// tokens are drawn from the servers' clock, so the fence refuses the earlier
// holder of any overlap: the checker must find every overlap guarded. The long
// form repeats the faults, and runs the workers with WithReplicas(1) too.
//
// Beside them, 3 processes run a partition group of 12 partitions whose
// own keys (its members and assignment) lie on the primary that fails
// over, and whose partitions' locks, NAME:P, lie in 12 slots on every
// primary (under WithReplicas(1) too: see TestGroupJoinNotReplicated).
// Each partition is
// checked as the locks are (Check and porcupine, on a fenced resource of
// its own), and the group as TestGroupFaults checks it (CheckOwned): every
// partition runs again within the members' lease and takeoverSlack of the
// cluster being whole again (the new primary agreed on; after kill -9, the
// old one back as a replica). Over kill -9 the members lose their
// memberships with the primary, stop their fns and join again.
func TestClusterFailoverFaults(t *testing.T) {
	variants := []int{0}
	if long() {
		variants = append(variants, 1)
	}
	for _, replicas := range variants {
		t.Run(fmt.Sprintf("WithReplicas(%d)", replicas), func(t *testing.T) {
			cl := redistest.StartClusterReplicas(t, 3, 1).For(t)
			const tag = "{chaos-failover}"
			slot := cl.KeySlot(tag)
			owner := cl.Owner(slot)
			// The workers find the cluster through a node the faults spare.
			var seed *redistest.Server
			for _, s := range cl.Nodes {
				if s != owner && s != cl.Replica(owner) {
					seed = s
					break
				}
			}
			// The group first: its members' start, heavy under -race,
			// would slow the locks' waiters, whose waits count from
			// their start.
			var g *groupRig
			var members []*proc
			g = groupOn(t, cl, owner, seed, replicas)
			members = g.spawnN("m", 3, nil)
			g.balanced(60*time.Second, members...)
			kinds := []string{KindRLock, KindFair}
			rigs := workersOn(t, pick(2, 4), func(i int) WorkerConfig {
				base := defaults(kinds[i%len(kinds)], fmt.Sprintf("cluster-%d%s", i, tag), seed.Addr())
				base.Replicas, base.ReplicaTimeout = replicas, 300*time.Millisecond
				return base
			})
			if _, major := redistest.Version(); major < 7 {
				// Classic PUBLISH: no Client passes the lock.
				for _, r := range rigs {
					r.racing = true
				}
			}
			var fs []failover
			for range pick(1, 3) {
				for _, f := range clusterFaults {
					// One failover at a time: the previous one's old
					// primary in sync again as a replica first.
					cl.AwaitReplicas(30 * time.Second)
					owner := cl.Owner(slot)
					// Every rig's: the test's schedule is shared.
					fault := rigs[0].fault(f.name, 1)
					at := Now()
					if f.kill {
						cl.Kill(owner)
						cl.AwaitOwner(slot, owner, 30*time.Second)
					} else {
						cl.Failover(cl.Replica(owner), 30*time.Second)
					}
					agreed := Now()
					fs = append(fs, failover{f.name, at, agreed})
					if f.kill {
						// With WithReplicas nothing is acquired until a
						// replica is back.
						cl.Rejoin(owner, 30*time.Second)
					}
					if g != nil {
						g.healed(fault, Now())
					}
					for _, r := range rigs {
						r.await(30*time.Second, "entries after the failover", func(a Accepted) bool {
							return a.Phase == "enter" && a.Issued > agreed
						}, 0, 5)
					}
					if g != nil {
						g.balanced(30*time.Second, members...)
					}
					fault.heal()
				}
			}
			for _, r := range rigs {
				r.check(waitSlack)
			}
			if g != nil {
				g.check(false)
			}
			for i, f := range fs {
				until := Now()
				if i+1 < len(fs) {
					until = fs[i+1].at
				}
				t.Logf("%s: every node named the new primary %v after the fault; longest time without an entry, per name: %s",
					f.name, f.agreed.Sub(f.at).Round(time.Millisecond), strings.Join(stalls(rigs, f, until), ", "))
			}
		})
	}
}

// groupOn makes the rig of a partition group of 12 partitions on cl, with
// replicas for WithReplicas, whose members find the cluster through seed:
// its name's slot (its own keys') is served by primary, and its partitions'
// locks lie in 12 slots on every primary, which it checks.
func groupOn(t *testing.T, cl *redistest.Cluster, primary, seed *redistest.Server, replicas int) *groupRig {
	t.Helper()
	const n = 12
	name := ""
	for i := 0; name == ""; i++ {
		if c := fmt.Sprintf("chaos-group-%d", i); cl.Owner(cl.KeySlot(c)) == primary {
			name = c
		}
	}
	slots, nodes := map[int64]bool{}, map[*redistest.Server]bool{}
	for p := range n {
		slot := cl.KeySlot(partName(name, p))
		slots[slot] = true
		nodes[cl.Owner(slot)] = true
		if token := cl.KeySlot("redisson_lock_token:{" + partName(name, p) + "}"); token != slot {
			t.Fatalf("partition %d: its lock in slot %d, its fencing counter in %d", p, slot, token)
		}
	}
	t.Logf("group %s (slot %d): %d partitions' locks in %d slots on %d of %d primaries", name, cl.KeySlot(name), n, len(slots), len(nodes), len(cl.Primaries()))
	if len(slots) != n || len(nodes) != len(cl.Primaries()) {
		t.Fatalf("%d partitions' locks in %d slots on %d primaries: not spread", n, len(slots), len(nodes))
	}
	base := groupDefaults(name, n, seed.Addr())
	base.Replicas, base.ReplicaTimeout = replicas, 300*time.Millisecond
	return newGroupRig(t, base)
}

// failover is the failover of a primary that a fault test caused: when the
// fault came, and when the cluster (or the Sentinels) agreed on the new
// primary.
type failover struct {
	name       string
	at, agreed Mono
}

// workersOn starts n rigs, base(i) the configuration of the i-th, with 3
// worker processes each, and returns once every worker is at work.
func workersOn(t *testing.T, n int, base func(i int) WorkerConfig) []*rig {
	t.Helper()
	rigs := make([]*rig, n)
	workers := make([][]*proc, n)
	for i := range rigs {
		rigs[i] = newRig(t, base(i))
		workers[i] = rigs[i].spawnN("w", 3, nil)
	}
	for i, r := range rigs {
		r.ready(workers[i]...)
	}
	return rigs
}

// stalls is what the workers of each rig saw of f: the longest time from f
// to the first entry into a section after it, or between two entries,
// before until.
func stalls(rigs []*rig, f failover, until Mono) []string {
	out := make([]string, len(rigs))
	for i, r := range rigs {
		last, worst := f.at, time.Duration(-1)
		for _, e := range r.log() {
			if e.Phase == "enter" && e.Issued > f.at && e.Issued < until {
				worst, last = max(worst, e.Issued.Sub(last)), e.Issued
			}
		}
		out[i] = worst.Round(time.Millisecond).String()
		if worst < 0 {
			out[i] = "no entry"
		}
	}
	return out
}
