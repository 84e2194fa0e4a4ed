package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/leasehold/leasehold/internal/lua"
)

// A partition group NAME (package partition) keeps its members and their
// partitions in {NAME}:members and {NAME}:partitions, read in one step by
// lua.Group.State; partition P is the reentrant lock NAME:P, read as
// inspect reads a lock. The group command puts the two together: which
// member each partition is assigned to, whether that member's Client holds
// its lock, under which token, since when.

// group is one snapshot of a partition group.
type group struct {
	name string // as given, without -prefix
	lua.GroupState
	parts []*lock // partition P's lock, by P
	owner []int   // partition P's member, an index in Members, by P; -1 for none
	// members is the members as the holders of a lock of their own, so that
	// clients.annotate finds their connections with the partitions'.
	members *lock
}

// Partition states, as group shows them.
const (
	partRunning    = "running"    // held by its owner's Client
	partMoving     = "moving"     // held by another Client: its last owner's fn has not returned, or a dead owner's lease runs out
	partFree       = "free"       // not held: its owner is taking it, or its fn returned nil
	partUnassigned = "unassigned" // no member's: beyond every member's capacity
)

// readGroup takes a snapshot of the group name (under the key prefix): the
// group, then its partitions' locks, pipelined. A partition's lock may
// change between the two reads.
func (e env) readGroup(ctx context.Context, name string) (*group, error) {
	st, err := lua.NewGroup(e.prefix+name, 0, 0, lua.Config{}).State(ctx, e.rc)
	if err != nil {
		return nil, fmt.Errorf("group %s: %w", name, err)
	}
	g := &group{name: name, GroupState: st, members: &lock{prefix: e.prefix}}
	names := make([]string, st.N)
	for p := range names {
		names[p] = lua.PartitionName(e.prefix+name, p)
	}
	states, err := lua.InspectAll(ctx, e.rc, names)
	if err != nil {
		return nil, err
	}
	locks := []*lock{g.members}
	for _, s := range states {
		l := &lock{State: s, prefix: e.prefix}
		g.parts = append(g.parts, l)
		locks = append(locks, l)
	}
	g.owner = make([]int, st.N)
	for p := range g.owner {
		g.owner[p] = -1
	}
	for i, m := range st.Members {
		g.members.Holders = append(g.members.Holders, lua.Holder{Owner: m.Member})
		for _, p := range m.Parts {
			if p >= 0 && p < st.N {
				g.owner[p] = i
			}
		}
	}
	e.clients.annotate(ctx, locks...)
	return g, nil
}

// isGroup reports whether name (under the key prefix) is a partition group
// with a member: inspect says so of a name it finds free.
func (e env) isGroup(ctx context.Context, name string) bool {
	key := lua.NewGroup(e.prefix+name, 0, 0, lua.Config{}).Members()
	n, err := e.rc.Do(ctx, e.rc.B().Exists().Key(key).Build()).AsInt64()
	return err == nil && n > 0
}

// part is partition p as group shows it.
type part struct {
	owner  int    // the index in Members of the member it is assigned to; -1 for none
	holder string // the owner field holding its lock; "" for none
	by     int    // the index in Members of the member whose Client holds it; -1 for none
	state  string
	// since is when the partition's lock was taken, read from its token:
	// zero when the lock is not held or its token is none of the clock's.
	since time.Time
}

// part reads partition p: its member, its lock's holder, its state.
func (g *group) part(p int) part {
	pt := part{owner: g.owner[p], by: -1}
	l := g.parts[p]
	if len(l.Holders) > 0 {
		pt.holder = l.Holders[0].Owner
		for i, m := range g.Members {
			if ownerClient(m.Member) == ownerClient(pt.holder) {
				pt.by = i
			}
		}
		pt.since = tokenTime(l.Token, l.At)
	}
	switch {
	case pt.owner < 0:
		pt.state = partUnassigned
	case pt.holder == "":
		pt.state = partFree
	case pt.by == pt.owner:
		pt.state = partRunning
	default:
		pt.state = partMoving
	}
	return pt
}

// tokenTime is the time a leasehold token drawn from the server's clock
// reads as (its µs since the epoch), or zero for a token that is none of
// the clock's (0: none drawn within a lease; one of Redisson's small
// counters; one ahead of now). A token is drawn from the clock when the
// lock's counter is gone, a lease after the last draw, and is the last
// one plus one otherwise: it reads as its acquisition's time, or as an
// earlier acquisition's when the lock was taken within a lease of the
// last draw (docs/operator.md).
func tokenTime(token uint64, now time.Time) time.Time {
	const clockTokens = 1e15 // every µs reading of a clock since 2001 is above
	if token < clockTokens || token > uint64(now.UnixMicro()) {
		return time.Time{}
	}
	return time.UnixMicro(int64(token))
}

// renderGroup writes g as the group command shows it.
func renderGroup(w io.Writer, g *group) error {
	head := table(w, "")
	head.row("name", g.name)
	head.row("kind", "partition group (package partition)")
	if len(g.Members) == 0 {
		head.row("members", "none: no member runs, and nothing of the group is left in Redis")
		return head.flush()
	}
	head.row("partitions", fmt.Sprint(g.N))
	head.row("generation", fmt.Sprint(g.Generation))
	if err := head.flush(); err != nil {
		return err
	}
	parts := make([]part, g.N)
	running := make([]int, len(g.Members))
	for p := range parts {
		parts[p] = g.part(p)
		if parts[p].state == partRunning {
			running[parts[p].owner]++
		}
	}
	fmt.Fprintf(w, "members (%d, soonest lease end first)\n", len(g.Members))
	t := table(w, "  ")
	t.row("#", "MEMBER", "LEASE ENDS IN", "CAPACITY", "ASSIGNED", "RUNNING", "CLIENT")
	for i, m := range g.Members {
		lease := duration(m.LeaseEnd.Sub(g.At))
		if !m.LeaseEnd.After(g.At) {
			lease = "ended: dropped at the next member's check"
		}
		capacity := "-"
		if m.Capacity > 0 {
			capacity = fmt.Sprint(m.Capacity)
		}
		t.row(fmt.Sprint(i+1), m.Member, lease, capacity, fmt.Sprint(len(m.Parts)), fmt.Sprint(running[i]),
			g.members.conn(m.Member).String())
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "partitions")
	t = table(w, "  ")
	t.row("PARTITION", "OWNER", "STATE", "TOKEN", "SINCE")
	for p, pt := range parts {
		owner, state, token, since := "-", pt.state, "-", "-"
		if pt.owner >= 0 {
			owner = "#" + fmt.Sprint(pt.owner+1)
		}
		switch {
		case pt.state != partMoving && pt.state != partUnassigned || pt.holder == "":
		case pt.by >= 0:
			state += fmt.Sprintf(": held by #%d's Client", pt.by+1)
		default:
			state += ": held by " + pt.holder
		}
		l := g.parts[p]
		if pt.holder != "" {
			switch {
			case l.Token == 0:
				// The counter expires a lease after the last draw.
				token, since = "none (run out)", "over a lease ago"
			case !pt.since.IsZero():
				token, since = fmt.Sprint(l.Token), duration(l.At.Sub(pt.since))+" ago"
			default:
				token = fmt.Sprint(l.Token)
			}
		}
		t.row(fmt.Sprint(p), owner, state, token, since)
	}
	return t.flush()
}

// groupJSON is a partition group as group -json prints it. Every field is
// always there; null means "does not apply". Scripts read these names: they
// stay.
type groupJSON struct {
	Name string `json:"name"`
	// Time is when the snapshot was taken, by the Redis server's clock.
	Time string `json:"time"`
	// N is the group's partitions, Generation its assignment's: 0 for a
	// group with no member.
	N          int          `json:"n"`
	Generation uint64       `json:"generation"`
	Members    []memberJSON `json:"members"`
	Partitions []partJSON   `json:"partitions"`
}

// memberJSON is one member of a group.
type memberJSON struct {
	// Member is its owner field, CLIENT_ID:LEASE_ID.
	Member string `json:"member"`
	// LeaseTTLms is how long until its lease ends, in milliseconds: 0 or
	// less once it has (the next member's check drops it).
	LeaseTTLms int64 `json:"lease_ttl_ms"`
	// Capacity is the most partitions it owns, null for no limit.
	Capacity *int `json:"capacity"`
	// Assigned are its partitions, ascending; Running how many of them its
	// Client holds the lock of.
	Assigned []int       `json:"assigned"`
	Running  int         `json:"running"`
	Client   *clientJSON `json:"client"`
}

// partJSON is one partition of a group.
type partJSON struct {
	Partition int `json:"partition"`
	// Lock is its lock's name, NAME:P.
	Lock string `json:"lock"`
	// Owner is the member it is assigned to, null for none.
	Owner *string `json:"owner"`
	// State is running (its lock held by its owner's Client), moving (held
	// by another Client), free (not held) or unassigned.
	State string `json:"state"`
	// Holder is the owner field holding its lock, null when free; Client
	// its connection.
	Holder *string     `json:"holder"`
	Client *clientJSON `json:"client"`
	// Token is its lock's fencing counter, 0 when none was drawn within a
	// lease; Since is the time it reads as, when the lock is held and the
	// token is one of the clock's (see docs/operator.md), else null.
	Token uint64  `json:"token"`
	Since *string `json:"since"`
	// TTLms is its lock's remaining TTL in milliseconds, null when free.
	TTLms *int64 `json:"ttl_ms"`
}

// renderGroupJSON writes g as one line of JSON.
func renderGroupJSON(w io.Writer, g *group) error {
	const stamp = "2006-01-02T15:04:05.000000Z07:00"
	j := groupJSON{Name: g.name, Time: g.At.UTC().Format(stamp), N: g.N, Generation: g.Generation,
		Members: make([]memberJSON, 0, len(g.Members)), Partitions: make([]partJSON, 0, g.N)}
	running := make([]int, len(g.Members))
	for p := range g.N {
		pt := g.part(p)
		l := g.parts[p]
		pj := partJSON{Partition: p, Lock: l.shown(), State: pt.state, Token: l.Token}
		if pt.owner >= 0 {
			pj.Owner = &g.Members[pt.owner].Member
		}
		if pt.holder != "" {
			pj.Holder, pj.Client = &pt.holder, clientToJSON(l.conn(pt.holder))
			ttl := millis(l.TTL)
			pj.TTLms = &ttl
		}
		if !pt.since.IsZero() {
			s := pt.since.UTC().Format(stamp)
			pj.Since = &s
		}
		if pt.state == partRunning {
			running[pt.owner]++
		}
		j.Partitions = append(j.Partitions, pj)
	}
	for i, m := range g.Members {
		mj := memberJSON{Member: m.Member, LeaseTTLms: m.LeaseEnd.Sub(g.At).Milliseconds(), Assigned: m.Parts,
			Running: running[i], Client: clientToJSON(g.members.conn(m.Member))}
		if mj.Assigned == nil {
			mj.Assigned = []int{}
		}
		if m.Capacity > 0 {
			mj.Capacity = &m.Capacity
		}
		j.Members = append(j.Members, mj)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(j)
}

// groupCmd runs the group command.
func groupCmd(ctx context.Context, e env, name string, asJSON bool) error {
	if name == "" {
		return usagef("group takes a NAME")
	}
	g, err := e.readGroup(ctx, name)
	if err != nil {
		return err
	}
	if asJSON {
		return renderGroupJSON(e.stdout, g)
	}
	return renderGroup(e.stdout, g)
}
