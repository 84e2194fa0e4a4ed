package lua

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/script"
)

// The partition group's scripts (package partition; script/lua/lib/partition.lua
// has the layout and the rule of assignment): a member joins, is renewed by
// its Client's keeper and leaves as a lock's hold is taken, renewed and
// released, and each of those assigns the partitions anew when the live
// members change; partition_check is what a member reads to act on,
// partition_state what an operator reads. The partitions themselves are
// reentrant locks (Lock), one per partition.
var (
	partitionJoin  = load("partition_join")
	partitionRenew = load("partition_renew")
	partitionLeave = load("partition_leave")
	partitionCheck = load("partition_check")
	partitionState = load("partition_state")
)

// KindMember is the kind of a partition group's memberships: holds the
// keeper renews and a Client's Close releases, as a lock's, taken by
// package partition's Run for as long as it runs. It is no row of Kinds:
// nobody acquires it, its holds are never handed out as leases, and the
// Client's Observer hears nothing of them (a group's partitions are rlocks,
// observed as such).
var KindMember = &Kind{Name: "partition-member", Package: "partition", AllUnlatched: true}

// MaxPartitions is the most partitions a group may have: a member's row
// (its partitions, as one string) and the assignment a script computes stay
// small enough for one script run.
const MaxPartitions = 1 << 14

// Group is the partition group on one name, its keys and arguments derived
// once. It is the Protocol of the group's memberships: Try joins, Release
// leaves, Renewal renews.
type Group struct {
	Traits
	keys     []string // {NAME}:members, {NAME}:partitions, channel
	lease    string   // ms
	n        string   // the partitions
	capacity string   // the member's capacity, "0" for none
}

var _ Protocol = (*Group)(nil)

// NewGroup returns the group name of n partitions, joined by members of
// the given capacity (0: no limit), with the settings of cfg.
func NewGroup(name string, n, capacity int, cfg Config) *Group {
	// {NAME}, or NAME when it holds a '{': the form in which every key
	// derived from a lock name holds it (script.Keys), so the group's keys
	// lie in the Redis Cluster slot of NAME.
	tag := script.KeysOf(name).RWPrefix
	return &Group{
		Traits:   Traits{Kind: KindMember},
		keys:     []string{tag + ":members", tag + ":partitions", "leasehold_partition__channel:" + tag},
		lease:    Ms(cfg.Lease),
		n:        strconv.Itoa(n),
		capacity: strconv.Itoa(capacity),
	}
}

// PartitionName is the lock name of partition p of the group name, NAME:P:
// a reentrant lock (Lock) whose keys, in Redis Cluster, hash to a slot of
// their own.
func PartitionName(name string, p int) string { return name + ":" + strconv.Itoa(p) }

// Members is the key of the group's members, {NAME}:members.
func (g *Group) Members() string { return g.keys[0] }

// Partitions is the key of the group's assignment, {NAME}:partitions.
func (g *Group) Partitions() string { return g.keys[1] }

// Channel is where the group's changes are told,
// leasehold_partition__channel:{NAME}.
func (g *Group) Channel() string { return g.keys[2] }

// Try runs partition_join: owner joins, and the partitions are assigned
// anew. It is not Acquired when the group's live members have another
// number of partitions; then nothing is written.
func (g *Group) Try(ctx context.Context, c rueidis.Client, owner string, _ bool) (Grant, error) {
	return ParseGrant(partitionJoin.exec(ctx, c, g.keys, []string{g.lease, owner, g.n, g.capacity, script.WakeAllMessage}))
}

// Release runs partition_leave: owner leaves, its partitions go to the
// others. A membership is one hold: every release gives it up.
func (g *Group) Release(ctx context.Context, c rueidis.Client, owner, _ string, _ bool, _ time.Duration) (int64, error) {
	return partitionLeave.exec(ctx, c, g.keys, []string{owner, script.WakeAllMessage}).AsInt64()
}

// Renewal is partition_renew.
func (g *Group) Renewal(owner string) *Call {
	return &Call{script: partitionRenew, Keys: g.keys, Args: []string{g.lease, owner, script.WakeAllMessage}}
}

// Wakeup is the group's channel: its messages tell of changes, and wake
// every waiter (script.WakeAllMessage).
func (g *Group) Wakeup(string) (channel, key string) { return g.Channel(), "" }

// Presence is none: every member's renewal writes the members key, so
// tracking it would have each member read at each renewal of every other.
// A member hears that it was dropped at its next renewal, or check.
func (g *Group) Presence(string) Presence { return Presence{} }

// View is a member's view of its group, as partition_check reads it.
type View struct {
	// Member: the member's lease runs; when not, it was dropped.
	Member bool
	// Generation rises with every change of the assignment.
	Generation uint64
	// Members is how many members are live.
	Members int
	// Next is how long until the first lease of another member ends, as
	// the server measured it; negative when there is no other member.
	Next time.Duration
	// Parts are the member's partitions, ascending.
	Parts []int
}

// Check runs partition_check for owner: the members whose lease ended are
// dropped first (and the partitions assigned anew), then owner's view read.
func (g *Group) Check(ctx context.Context, c rueidis.Client, owner string) (View, error) {
	v, err := Ints(partitionCheck.exec(ctx, c, g.keys, []string{owner, script.WakeAllMessage}))
	if err != nil {
		return View{}, err
	}
	if len(v) < 4 {
		return View{}, fmt.Errorf("lua: unexpected partition_check reply of %d values", len(v))
	}
	view := View{Member: v[0] == 1, Generation: uint64(v[1]), Members: int(v[2]), Next: -1, Parts: make([]int, 0, len(v)-4)}
	if v[3] >= 0 {
		view.Next = time.Duration(v[3]) * time.Millisecond
	}
	for _, p := range v[4:] {
		view.Parts = append(view.Parts, int(p))
	}
	return view, nil
}

// GroupState is a partition group as partition_state reads it.
type GroupState struct {
	// At is when it was read, by the server's clock.
	At time.Time
	// N is the group's partitions, Generation its assignment's generation:
	// 0 for a group with no member.
	N          int
	Generation uint64
	// Members are by the end of their lease, the first to end first.
	Members []MemberState
}

// MemberState is one member of a group.
type MemberState struct {
	Member string // CLIENT_ID:LEASE_ID
	// LeaseEnd is when its lease ends, by the server's clock: a member
	// whose lease has ended (before At) is no longer one, and is dropped
	// by the next member's script.
	LeaseEnd time.Time
	Capacity int   // the most partitions it owns; 0 for no limit
	Parts    []int // ascending
}

// State runs partition_state: the group as it stands. It writes nothing.
func (g *Group) State(ctx context.Context, c rueidis.Client) (GroupState, error) {
	s, err := partitionState.exec(ctx, c, g.keys[:2], nil).ToString()
	if err != nil {
		return GroupState{}, err
	}
	lines := strings.Split(s, "\n")
	head, err := appendInts(nil, lines[0])
	if err != nil || len(head) != 3 {
		return GroupState{}, fmt.Errorf("lua: unexpected partition_state head %q", lines[0])
	}
	st := GroupState{At: time.UnixMilli(head[0]), N: int(head[1]), Generation: uint64(head[2])}
	for _, line := range lines[1:] {
		member, rest, _ := strings.Cut(line, " ")
		v, err := appendInts(nil, rest)
		if err != nil || len(v) < 2 {
			return GroupState{}, fmt.Errorf("lua: unexpected partition_state line %q", line)
		}
		m := MemberState{Member: member, LeaseEnd: time.UnixMilli(v[0]), Capacity: int(v[1]), Parts: make([]int, 0, len(v)-2)}
		for _, p := range v[2:] {
			m.Parts = append(m.Parts, int(p))
		}
		st.Members = append(st.Members, m)
	}
	return st, nil
}
