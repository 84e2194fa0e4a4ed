package lua

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/harness/redistest"
)

// groupRig runs a partition group's scripts on one server, members
// standing for processes.
type groupRig struct {
	t   *testing.T
	ctx context.Context
	c   rueidis.Client
	n   int
	cfg Config
}

func newGroupRig(t *testing.T, srv *redistest.Server, n int) *groupRig {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return &groupRig{t: t, ctx: ctx, c: srv.Client(), n: n, cfg: Config{Lease: time.Minute}}
}

func (r *groupRig) group(capacity int) *Group { return NewGroup("g", r.n, capacity, r.cfg) }

func (r *groupRig) join(member string, capacity int) {
	r.t.Helper()
	g, err := r.group(capacity).Try(r.ctx, r.c, member, true)
	if err != nil || !g.Acquired {
		r.t.Fatalf("join %s: %+v, %v", member, g, err)
	}
}

func (r *groupRig) leave(member string) {
	r.t.Helper()
	if n, err := r.group(0).Release(r.ctx, r.c, member, "", true, 0); err != nil || n != Freed {
		r.t.Fatalf("leave %s: %d, %v", member, n, err)
	}
}

// owners reads the assignment: partition -> member, and each member's
// partitions; it fails the test if a partition has two owners.
func (r *groupRig) owners() (map[int]string, map[string][]int, GroupState) {
	r.t.Helper()
	st, err := r.group(0).State(r.ctx, r.c)
	if err != nil {
		r.t.Fatal(err)
	}
	owner, parts := map[int]string{}, map[string][]int{}
	for _, m := range st.Members {
		parts[m.Member] = m.Parts
		for _, p := range m.Parts {
			if o, ok := owner[p]; ok {
				r.t.Fatalf("partition %d assigned to %s and %s", p, o, m.Member)
			}
			owner[p] = m.Member
		}
	}
	return owner, parts, st
}

// The rule of assignment, over random joins and leaves of members with and
// without a capacity: every partition has at most one owner; every member
// owns its quota (floor or ceil of n over the members, or its capacity when
// that is lower, the others sharing the rest), and as many partitions as
// the capacities allow are owned; a join moves partitions only to the
// joiner, and only the surplus over the quotas; a leave moves only the
// leaver's partitions; a change raises the generation, and running the
// rule again (a check that finds nothing to drop) changes nothing.
func TestPartitionAssignment(t *testing.T) {
	srv := redistest.Start(t)
	for _, n := range []int{1, 7, 64, 1000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			srv.Do("FLUSHALL")
			r := newGroupRig(t, srv, n)
			rng := rand.New(rand.NewPCG(uint64(n), 1))
			caps := map[string]int{}
			var live []string
			gen := uint64(0)
			for step := range 60 {
				before, _, _ := r.owners()
				var joiner, leaver string
				if len(live) == 0 || (len(live) < 12 && rng.IntN(3) > 0) {
					// Named at random: the order of names is not the
					// order of joins.
					joiner = fmt.Sprintf("m%03d-%02d", rng.IntN(1000), step)
					capacity := 0
					if rng.IntN(4) == 0 {
						capacity = 1 + rng.IntN(max(n/3, 1))
					}
					caps[joiner] = capacity
					r.join(joiner, capacity)
					live = append(live, joiner)
				} else {
					i := rng.IntN(len(live))
					leaver = live[i]
					live = slices.Delete(live, i, i+1)
					r.leave(leaver)
				}
				after, parts, st := r.owners()
				checkQuotas(t, n, live, caps, parts)
				moved := 0
				for p := range n {
					if before[p] == after[p] {
						continue
					}
					moved++
					switch {
					case joiner != "" && before[p] != "" && after[p] != joiner:
						t.Fatalf("step %d, %s joins: partition %d moved from %s to %s, not to the joiner", step, joiner, p, before[p], after[p])
					case leaver != "" && before[p] != leaver && before[p] != "":
						t.Fatalf("step %d, %s leaves: partition %d of %s moved to %s", step, leaver, p, before[p], after[p])
					}
				}
				// Each member owns its quota, computed here apart from
				// the script, from what each owned before: so only what
				// must move did.
				counts := map[string]int{}
				for _, o := range before {
					counts[o]++
				}
				for m, q := range quotasOf(n, live, caps, counts) {
					if len(parts[m]) != q {
						t.Fatalf("step %d: %s owns %d partitions, want its quota %d (owned %d before)", step, m, len(parts[m]), q, counts[m])
					}
				}
				if len(live) == 0 {
					gen = 0 // the group's keys went with its last member
				} else {
					if moved > 0 && st.Generation <= gen {
						t.Fatalf("step %d: the assignment changed, the generation stayed %d", step, st.Generation)
					}
					gen = st.Generation
					// A check that drops nothing writes nothing.
					v, err := r.group(0).Check(r.ctx, r.c, live[0])
					if err != nil || v.Generation != gen || !v.Member || v.Members != len(live) || !slices.Equal(v.Parts, parts[live[0]]) {
						t.Fatalf("step %d: check = %+v, %v; want generation %d, member, %d members, parts %v",
							step, v, err, gen, len(live), parts[live[0]])
					}
				}
			}
		})
	}
}

// quotasOf is the rule's quotas, written apart from the script: the members
// whose capacity is below their share get their capacity, repeatedly; the
// others share the rest, the extra ones to those owning most now, then by
// name.
func quotasOf(n int, live []string, caps map[string]int, counts map[string]int) map[string]int {
	q := map[string]int{}
	open := slices.Sorted(slices.Values(live))
	left := n
	for len(open) > 0 {
		share := left / len(open)
		var rest []string
		for _, m := range open {
			if c := caps[m]; c > 0 && c <= share {
				q[m], left = c, left-c
			} else {
				rest = append(rest, m)
			}
		}
		if len(rest) == len(open) {
			break
		}
		open = rest
	}
	if len(open) > 0 {
		base, extra := left/len(open), left%len(open)
		slices.SortStableFunc(open, func(a, b string) int { return counts[b] - counts[a] })
		for i, m := range open {
			q[m] = base
			if i < extra {
				q[m]++
			}
		}
	}
	return q
}

// checkQuotas fails t unless every live member owns floor or ceil of its
// share, and no more than its capacity, and as many partitions are owned as
// the capacities allow.
func checkQuotas(t *testing.T, n int, live []string, caps map[string]int, parts map[string][]int) {
	t.Helper()
	if len(live) == 0 {
		if len(parts) != 0 {
			t.Fatalf("no member, an assignment %v", parts)
		}
		return
	}
	room, owned := 0, 0
	uncapped := true
	for _, m := range live {
		owned += len(parts[m])
		if c := caps[m]; c > 0 {
			room += c
			uncapped = false
			if len(parts[m]) > c {
				t.Fatalf("%s owns %d partitions, above its capacity %d", m, len(parts[m]), c)
			}
		} else {
			room += n
		}
	}
	if want := min(n, room); owned != want {
		t.Fatalf("%d partitions owned, want %d (capacities %v)", owned, want, caps)
	}
	lo, hi := n/len(live), (n+len(live)-1)/len(live)
	for _, m := range live {
		k := len(parts[m])
		if uncapped && (k < lo || k > hi) {
			t.Fatalf("%s owns %d of %d partitions among %d members, want %d or %d", m, k, n, len(live), lo, hi)
		}
	}
	if !uncapped {
		// Those without a capacity differ by one at most, and own at
		// least every capped one not at its capacity.
		var free []int
		for _, m := range live {
			if caps[m] == 0 {
				free = append(free, len(parts[m]))
			}
		}
		if len(free) > 0 && slices.Max(free)-slices.Min(free) > 1 {
			t.Fatalf("members without a capacity own %v partitions: unbalanced", free)
		}
		for _, m := range live {
			if c := caps[m]; c > 0 && len(parts[m]) < c && len(free) > 0 && len(parts[m]) > slices.Max(free) {
				t.Fatalf("%s owns %d (capacity %d), above the others' %v", m, len(parts[m]), c, free)
			}
		}
	}
}

// A member whose lease ends is dropped by the next member's check or
// renewal, its partitions assigned to the live ones; the last lease to end
// takes the group's keys with it.
func TestPartitionLeaseEnds(t *testing.T) {
	srv := redistest.Start(t)
	r := newGroupRig(t, srv, 10)
	short := NewGroup("g", 10, 0, Config{Lease: 300 * time.Millisecond})
	if g, err := short.Try(r.ctx, r.c, "dying", true); err != nil || !g.Acquired {
		t.Fatal(g, err)
	}
	r.join("alive", 0)
	_, parts, _ := r.owners()
	if len(parts["dying"]) != 5 || len(parts["alive"]) != 5 {
		t.Fatalf("assignment %v, want 5 each", parts)
	}
	v, err := r.group(0).Check(r.ctx, r.c, "alive")
	if err != nil || v.Next <= 0 || v.Next > 300*time.Millisecond {
		t.Fatalf("check = %+v, %v: want the dying member's lease ending within 300ms", v, err)
	}
	time.Sleep(v.Next + 10*time.Millisecond)
	for _, step := range []string{"check", "renewal"} {
		t.Run(step, func(t *testing.T) {
			before := r.snapshotGen()
			switch step {
			case "check":
				v, err = r.group(0).Check(r.ctx, r.c, "alive")
			case "renewal":
				// Another dying member joins, runs out, and the
				// survivor's renewal drops it.
				if g, err := short.Try(r.ctx, r.c, "dying2", true); err != nil || !g.Acquired {
					t.Fatal(g, err)
				}
				time.Sleep(350 * time.Millisecond)
				before = r.snapshotGen()
				var n int64
				n, err = run(r.ctx, r.c, r.group(0).Renewal("alive")).AsInt64()
				if n != 1 {
					t.Fatalf("renewal = %d", n)
				}
				v, err = r.group(0).Check(r.ctx, r.c, "alive")
			}
			if err != nil || !v.Member || v.Members != 1 || len(v.Parts) != 10 || v.Next != -1 || v.Generation <= before {
				t.Fatalf("after the lease ended, %s: %+v, %v; want the survivor alone with all 10, a later generation", step, v, err)
			}
		})
	}
	if n, _ := run(r.ctx, r.c, short.Renewal("dying")).AsInt64(); n != 0 {
		t.Fatalf("renewal of a dropped member = %d, want 0", n)
	}
	if n, err := short.Release(r.ctx, r.c, "dying", "", true, 0); err != nil || n != NotHeld {
		t.Fatalf("leave of a dropped member = %d, %v; want %d", n, err, NotHeld)
	}
	ttl, _ := srv.Do("PTTL", r.group(0).Partitions()).AsInt64()
	if ttl <= 0 || ttl > time.Minute.Milliseconds() {
		t.Fatalf("the group's PTTL is %d, want the last member's lease", ttl)
	}
	r.leave("alive")
	if keys, _ := srv.Do("KEYS", "*").AsStrSlice(); len(keys) != 0 {
		t.Fatalf("keys left after the last member left: %v", keys)
	}
}

func (r *groupRig) snapshotGen() uint64 {
	_, _, st := r.owners()
	return st.Generation
}

// Live members agree on the number of partitions: a join with another is
// refused and writes nothing; once no member is live, the next join sets it.
func TestPartitionCountAgreed(t *testing.T) {
	srv := redistest.Start(t)
	r := newGroupRig(t, srv, 8)
	r.join("a", 0)
	before := snapshot(t, srv)
	g, err := NewGroup("g", 9, 0, r.cfg).Try(r.ctx, r.c, "b", true)
	if err != nil || g.Acquired {
		t.Fatalf("join with another count: %+v, %v; want refused", g, err)
	}
	if after := snapshot(t, srv); after != before {
		t.Fatalf("the refused join wrote:\nbefore %s\nafter  %s", before, after)
	}
	srv.Do("ZADD", r.group(0).Members(), "1", "a") // a's lease ended long ago
	if g, err := NewGroup("g", 9, 0, r.cfg).Try(r.ctx, r.c, "b", true); err != nil || !g.Acquired {
		t.Fatalf("join once no member is live: %+v, %v", g, err)
	}
	if _, _, st := r.owners(); st.N != 9 || len(st.Members) != 1 || len(st.Members[0].Parts) != 9 {
		t.Fatalf("state %+v: want 9 partitions, all b's", st)
	}
}

// Each script that writes fails before its first write when a key of the
// group is of another type or a field is not a count, and says so.
func TestPartitionScriptsFailBeforeWriting(t *testing.T) {
	srv := redistest.Start(t)
	r := newGroupRig(t, srv, 8)
	g := r.group(0)
	// An ended lease, so that each script has one to drop: a write to
	// make, were it not to fail first.
	ended := []string{"ZADD", g.Members(), "1", "gone"}
	renew := func() error { return run(r.ctx, r.c, g.Renewal("a")).Error() }
	join := func() error { _, err := g.Try(r.ctx, r.c, "b", true); return err }
	leave := func() error { _, err := g.Release(r.ctx, r.c, "a", "", true, 0); return err }
	check := func() error { _, err := g.Check(r.ctx, r.c, "a"); return err }
	setups := map[string][][]string{
		"members of another type":    {{"SET", g.Members(), "x"}},
		"partitions of another type": {{"ZADD", g.Members(), "99999999999999", "a"}, ended, {"SET", g.Partitions(), "x"}},
		"a generation not a count":   {{"ZADD", g.Members(), "99999999999999", "a"}, ended, {"HSET", g.Partitions(), "gen", "x"}},
		"a capacity not a count":     {{"ZADD", g.Members(), "99999999999999", "a"}, ended, {"HSET", g.Partitions(), "capacity:a", "-1"}},
	}
	for sname, run := range map[string]func() error{"join": join, "renew": renew, "leave": leave, "check": check} {
		for what, setup := range setups {
			t.Run(sname+"/"+what, func(t *testing.T) {
				srv.Do("FLUSHALL")
				for _, cmd := range setup {
					if err := srv.Do(cmd...).Error(); err != nil {
						t.Fatal(err)
					}
				}
				before := snapshot(t, srv)
				err := run()
				if err == nil {
					t.Fatal("no error")
				}
				if after := snapshot(t, srv); after != before {
					t.Fatalf("the script wrote before failing (%v):\nbefore %s\nafter  %s", err, before, after)
				}
			})
		}
	}
}

// Each partition script's header says how many Redis commands it runs on
// each path; each path is run on a fresh server and its commands counted.
func TestPartitionScriptCalls(t *testing.T) {
	srv := redistest.Start(t)
	r := newGroupRig(t, srv, 8)
	c := r.c
	for _, s := range []*luaScript{partitionJoin, partitionRenew, partitionLeave, partitionCheck} {
		if err := c.Do(r.ctx, c.B().ScriptLoad().Script(s.plain.src).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	g := r.group(0)
	join := func(m string) func() error { return func() error { _, err := g.Try(r.ctx, c, m, true); return err } }
	renew := func(m string) func() error { return func() error { return run(r.ctx, c, g.Renewal(m)).Error() } }
	leave := func(m string) func() error {
		return func() error { _, err := g.Release(r.ctx, c, m, "", true, 0); return err }
	}
	check := func(m string) func() error { return func() error { _, err := g.Check(r.ctx, c, m); return err } }
	ended := func() error {
		return c.Do(r.ctx, c.B().Zadd().Key(g.Members()).ScoreMember().ScoreMember(1, "gone").Build()).Error()
	}
	other := func() error { _, err := NewGroup("g", 9, 0, r.cfg).Try(r.ctx, c, "b", true); return err }
	type path struct {
		setup []func() error
		run   func() error
	}
	paths := map[string]map[string]path{
		"partition_join": {
			"first member":  {nil, join("a")},
			"second member": {[]func() error{join("a")}, join("b")},
			"another N":     {[]func() error{join("a")}, other},
		},
		"partition_renew": {
			"renewed":                  {[]func() error{join("a")}, renew("a")},
			"renewed dropping another": {[]func() error{join("a"), join("gone"), ended}, renew("a")},
			"not a member":             {nil, renew("a")},
		},
		"partition_leave": {
			"last member":  {[]func() error{join("a")}, leave("a")},
			"one of two":   {[]func() error{join("a"), join("b")}, leave("a")},
			"not a member": {nil, leave("a")},
		},
		"partition_check": {
			"steady":           {[]func() error{join("a"), join("b")}, check("a")},
			"dropping another": {[]func() error{join("a"), join("gone"), ended}, check("a")},
		},
	}
	for sname, ps := range paths {
		want := headerCalls(t, sname)
		for p := range want {
			if _, ok := ps[p]; !ok {
				t.Errorf("%s: header path %q has no case here", sname, p)
			}
		}
		for pname, p := range ps {
			t.Run(sname+"/"+pname, func(t *testing.T) {
				srv.Do("FLUSHALL")
				for _, step := range p.setup {
					if err := step(); err != nil {
						t.Fatalf("setup: %v", err)
					}
				}
				before := scriptCalls(t, r.ctx, c)
				if err := p.run(); err != nil {
					t.Fatalf("run: %v", err)
				}
				after := scriptCalls(t, r.ctx, c)
				var got int64
				var which []string
				for cmd, n := range after {
					if d := n - before[cmd]; d > 0 {
						got += d
						which = append(which, cmd+"×"+strconv.FormatInt(d, 10))
					}
				}
				slices.Sort(which)
				if w, ok := want[pname]; !ok || got != int64(w) {
					t.Errorf("%s, %s: %d calls (%s), the header says %d", sname, pname, got, strings.Join(which, " "), w)
				}
			})
		}
	}
}
