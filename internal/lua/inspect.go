package lua

import (
	"context"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/keyslot"
	"github.com/leasehold/leasehold/script"
)

// Shape is what a key holds, as far as locks go: how Inspect reads it.
type Shape int

const (
	ShapeFree      Shape = iota // no lock (perhaps a fencing counter or a queue)
	ShapeRLock                  // reentrant lock (or a fair lock nobody waits for)
	ShapeFair                   // fair lock with waiters
	ShapeRW                     // read-write lock
	ShapeElection               // election: an rlock whose holder leads, named by {NAME}:leader
	ShapeSemaphore              // semaphore: NAME its permits available, with permits held, claims or waiters
	ShapeCounter                // an integer and no other key of a semaphore: a counter, or a semaphore nobody uses
	ShapeFence                  // package fence's record of the last token applied to a key
	ShapeNotLock                // a key that is not a lock
)

func (k Shape) String() string {
	switch k {
	case ShapeRLock:
		return "rlock"
	case ShapeFair:
		return "fair"
	case ShapeRW:
		return "rw"
	case ShapeElection:
		return "election"
	case ShapeSemaphore:
		return "semaphore"
	case ShapeCounter:
		return "counter or unused semaphore"
	case ShapeFence:
		return "fence"
	case ShapeNotLock:
		return "not a lock"
	}
	return "free"
}

// State is one snapshot of a lock, read by Inspect.
type State struct {
	Name      string
	Shape     Shape
	Type      string          // the Redis type of NAME ("none" when absent)
	Mode      string          // rw: "read" or "write"
	TTL       time.Duration   // remaining TTL of NAME; -1 when it has none, 0 when there is no key
	Token     uint64          // last fencing token drawn; 0 when none yet
	Holders   []Holder        // sorted: writers first, then by owner
	Waiters   []Waiter        // fair queue, oldest first
	Writers   []Waiter        // rw: waiting writers (writer preference), by owner
	Foreign   []string        // fields of a hash that do not look like a lock
	KeptBy    string          // released sooner than WithHoldAtLeast by this owner, kept until At+TTL; "" if not
	At        time.Time       // when the snapshot was taken, by the server's clock
	Semaphore *SemaphoreState // a semaphore's permits; nil for a lock
	Leader    *LeaderState    // an election's leader; nil when nobody leads
	Count     int64           // ShapeCounter: the integer NAME holds
	Fence     *FenceState     // ShapeFence: whose record NAME is; nil for any other shape
}

// FenceState is package fence's record of the last token applied to a key
// (leasehold_fence:{KEY}, see fence.Redis).
type FenceState struct {
	Resource string // KEY, the key whose writes are fenced
	Token    uint64 // the last token applied to it: a lower one is refused
}

// Held reports whether anyone holds the lock, or a permit of the semaphore.
func (s *State) Held() bool {
	return len(s.Holders) > 0 || (s.Semaphore != nil && len(s.Semaphore.Permits) > 0)
}

// Holder is one owner's holds on a lock.
type Holder struct {
	Owner string // CLIENT_ID:LEASE_ID (leasehold) or UUID:THREAD_ID (Redisson)
	Count int64
	Write bool // a read-write lock's write holds (field OWNER:write)
	// Reads are the remaining TTLs of a read-write lock's read holds of
	// Owner, one per hold; a hold whose key is gone shows as 0, one with no
	// expiry as -1.
	Reads []time.Duration
}

// Waiter is a fair-lock waiter, a waiting writer of a read-write lock, or a
// semaphore's claim (owner OWNER:N).
type Waiter struct {
	Owner string
	// Left is how long the waiter keeps its place (a writer its
	// announcement, a claim its claim) without asking again; negative once
	// that has passed.
	Left time.Duration
	// Known is false for a queued owner with no deadline: the next attempt
	// of any waiter removes it.
	Known bool
}

// LeaderState is an election's leader, as {NAME}:leader names it
// (script.LeaderKey).
type LeaderState struct {
	Value string // what the leader published
	Term  uint64 // the token of its first campaign
	Owner string // its owner field in NAME
}

// SemaphoreState is a semaphore's permits.
type SemaphoreState struct {
	// Set is false when NAME holds no count (never set, or deleted while
	// permits were held): takers wait.
	Set       bool
	Available int64    // NAME's count: may be below 0 after permits were taken away
	Permits   []Permit // held, soonest expiry first
	Claims    []Waiter // waiters for several permits, owner OWNER:N, by owner
}

// Permit is one permit held.
type Permit struct {
	ID    string        // hex, as Java's API names it
	Left  time.Duration // until its lease runs out; 0 or less once it has
	Never bool          // taken by Redisson without a lease: never expires
}

// PermitLease is one lease's permits.
type PermitLease struct {
	ID      string // the first 28 hex digits its permits' ids share
	Permits int64
}

// idle reports whether the semaphore's count is all Redis keeps of it: no
// permit held, no claim for several. A counter looks the same.
func (s *SemaphoreState) idle() bool { return s.Set && len(s.Permits) == 0 && len(s.Claims) == 0 }

// Total is the semaphore's permits, available and held.
func (s *SemaphoreState) Total() int64 { return s.Available + int64(len(s.Permits)) }

// Leases are the leases holding permits, in the order of their soonest
// permit: leasehold's permits of one lease share their first 14 bytes
// (PermitPrefix); Redisson's ids are random, each its own.
func (s *SemaphoreState) Leases() []PermitLease {
	var out []PermitLease
	at := map[string]int{}
	for _, p := range s.Permits {
		id := p.ID[:min(len(p.ID), 28)]
		i, ok := at[id]
		if !ok {
			i, at[id] = len(out), len(out)
			out = append(out, PermitLease{ID: id})
		}
		out[i].Permits++
	}
	return out
}

// inspectBatch is how many snapshots InspectAll takes per round trip.
const inspectBatch = 100

// inspect is the snapshot script, inspect.lua. It publishes nothing: a
// Sharded client runs the same source.
var inspect = load("inspect")

// Inspect takes one snapshot of the lock name, in one atomic step, so that
// it never mixes two states (a holder from before a release with a queue
// from after it). It only reads. A string holding an integer and nothing
// else is a semaphore only if someone waits on its channel, which Inspect
// reads after the snapshot (see Listeners).
func Inspect(ctx context.Context, c rueidis.Client, name string) (State, error) {
	res, err := inspect.exec(ctx, c, inspectKeys(name), inspectArgs(name)).ToArray()
	if err != nil {
		return State{}, fmt.Errorf("inspect %s: %w", name, err)
	}
	s, err := parseState(name, res)
	if err != nil {
		return State{}, err
	}
	settle(ctx, c, &s)
	return s, nil
}

// InspectAll takes a snapshot of each lock of names, in the order given, as
// Inspect does, pipelining them a batch at a time. It stops at the first
// error.
func InspectAll(ctx context.Context, c rueidis.Client, names []string) ([]State, error) {
	out := make([]State, 0, len(names))
	for i := 0; i < len(names); i += inspectBatch {
		chunk := names[i:min(i+inspectBatch, len(names))]
		execs := make([]rueidis.LuaExec, len(chunk))
		for j, name := range chunk {
			execs[j] = rueidis.LuaExec{Keys: inspectKeys(name), Args: inspectArgs(name)}
		}
		for j, r := range inspect.plain.run.ExecMulti(ctx, c, execs...) {
			res, err := r.ToArray()
			if err != nil {
				return nil, fmt.Errorf("inspect %s: %w", chunk[j], err)
			}
			s, err := parseState(chunk[j], res)
			if err != nil {
				return nil, err
			}
			settle(ctx, c, &s)
			out = append(out, s)
		}
	}
	return out, nil
}

// settle makes s, a counter or a semaphore nobody uses by its keys, a
// semaphore when someone waits on its channel: a semaphore with no permit
// available and none held (AddPermits took them all, or it was set to 0)
// keeps nothing but its count and its waiters' subscriptions. A refused
// PUBSUB (an ACL without it) leaves s as it is.
func settle(ctx context.Context, c rueidis.Client, s *State) {
	if s.Shape != ShapeCounter {
		return
	}
	if n, err := Listeners(ctx, c, script.KeysOf(s.Name).SemaphoreChannel); err == nil && n > 0 {
		s.Shape, s.Semaphore, s.Count = ShapeSemaphore, &SemaphoreState{Set: true, Available: s.Count}, 0
	}
}

// Listeners counts the connections subscribed to channel on every node of
// c: PUBSUB NUMSUB, and PUBSUB SHARDNUMSUB where the server has sharded
// pub/sub (Redis 7+, where waiters in Redis Cluster subscribe so). A
// leasehold Client subscribes once per channel however many of its
// goroutines wait, and only while one does, as Redisson does: it counts
// waiting Clients, not goroutines.
func Listeners(ctx context.Context, c rueidis.Client, channel string) (int64, error) {
	var n int64
	for _, node := range c.Nodes() {
		m, err := node.Do(ctx, node.B().PubsubNumsub().Channel(channel).Build()).AsIntMap()
		if err != nil {
			return 0, fmt.Errorf("PUBSUB NUMSUB %s: %w", channel, err)
		}
		n += m[channel]
		// Redis 6.2 has no sharded pub/sub: its error says only that.
		if m, err := node.Do(ctx, node.B().PubsubShardnumsub().Channel(channel).Build()).AsIntMap(); err == nil {
			n += m[channel]
		}
	}
	return n, nil
}

// inspectKeys are the KEYS of inspect.lua for the lock name.
func inspectKeys(name string) []string {
	k := script.KeysOf(name)
	return []string{name, k.Token, k.FairQueue, k.FairTimeout, k.Writers, k.SemaphoreTimeout, k.SemaphoreClaims, k.Leader}
}

// inspectArgs are its ARGV: the prefix of the read hold keys.
func inspectArgs(name string) []string { return []string{script.KeysOf(name).RWPrefix} }

// inspectReply is inspect.lua's reply, read but not yet made sense of.
type inspectReply struct {
	typ       string                     // the Redis type of NAME
	pttl      int64                      // NAME's PTTL
	fields    []string                   // the hash NAME, field then value
	token     uint64                     // the fencing counter, 0 when none
	queue     []string                   // the fair queue, oldest first
	deadlines map[string]int64           // fair waiter -> deadline (ms)
	announced map[string]int64           // waiting writer -> announcement expiry (ms)
	now       int64                      // the server's clock (ms)
	reads     map[string][]time.Duration // reader -> TTL of each read hold
	semaphore []rueidis.RedisMessage     // permits, claims, count
	leader    rueidis.RedisMessage       // {value, token, owner} or false
}

// readReply reads the script's 13 values.
func readReply(name string, res []rueidis.RedisMessage) (*inspectReply, error) {
	if len(res) != 13 {
		return nil, fmt.Errorf("inspect %s: %d values from the script, want 13", name, len(res))
	}
	r := &inspectReply{semaphore: res[9:12], leader: res[12]}
	var err error
	if r.typ, err = res[0].ToString(); err != nil {
		return nil, err
	}
	if r.pttl, err = res[1].AsInt64(); err != nil {
		return nil, err
	}
	if r.fields, err = res[2].AsStrSlice(); err != nil {
		return nil, err
	}
	if tok, err := res[3].ToString(); err == nil {
		r.token, _ = strconv.ParseUint(tok, 10, 64)
	}
	if r.queue, err = res[4].AsStrSlice(); err != nil {
		return nil, err
	}
	if r.deadlines, err = scores(res[5]); err != nil {
		return nil, err
	}
	if r.announced, err = scores(res[6]); err != nil {
		return nil, err
	}
	if r.now, err = res[7].AsInt64(); err != nil {
		return nil, err
	}
	if r.reads, err = readHolds(res[8]); err != nil {
		return nil, err
	}
	return r, nil
}

// parseState makes a State of the script's reply for the lock name: which
// kind of lock NAME is, who holds it and who waits.
func parseState(name string, res []rueidis.RedisMessage) (State, error) {
	r, err := readReply(name, res)
	if err != nil {
		return State{}, err
	}
	s := State{Name: name, Type: r.typ, TTL: fromPTTL(r.pttl), Token: r.token, At: time.UnixMilli(r.now)}
	if s.Semaphore, err = parseSemaphore(r.typ, r.semaphore, r.now); err != nil {
		return State{}, err
	}
	for _, owner := range r.queue {
		w := Waiter{Owner: owner}
		if d, ok := r.deadlines[owner]; ok {
			w.Left, w.Known = time.Duration(d-r.now)*time.Millisecond, true
		}
		s.Waiters = append(s.Waiters, w)
	}
	s.Writers = expiring(r.announced, r.now)
	switch {
	case s.Semaphore != nil && s.Semaphore.idle():
		// An integer and no other key of a semaphore: fence's record by its
		// name and its token, else a counter or a semaphore nobody uses.
		parseInteger(&s, r.semaphore[2])
	case s.Semaphore != nil:
		s.Shape = ShapeSemaphore
	case s.Type == "none":
		s.Shape = ShapeFree
		if len(r.queue) > 0 {
			s.Shape = ShapeFair // free, but with waiters about to take it
		}
	case s.Type != "hash":
		s.Shape = ShapeNotLock
	default:
		parseHash(&s, r)
	}
	return s, nil
}

// parseInteger reads NAME, a string holding an integer with none of a
// semaphore's other keys: package fence's record of a key when its name and
// its value are one's, else a counter or a semaphore nobody uses, which
// settle tells apart by its channel.
func parseInteger(s *State, value rueidis.RedisMessage) {
	v, _ := value.ToString()
	if key, ok := fenceResource(s.Name); ok && v != "" && v[0] != '0' {
		if tok, err := strconv.ParseUint(v, 10, 64); err == nil {
			s.Shape, s.Semaphore, s.Fence = ShapeFence, nil, &FenceState{Resource: key, Token: tok}
			return
		}
	}
	s.Shape, s.Count, s.Semaphore = ShapeCounter, s.Semaphore.Available, nil
}

// fenceRecordPrefix starts package fence's record of the last token applied
// to a key (recordKey, fence/slot.go).
const fenceRecordPrefix = "leasehold_fence:"

// fenceResource is the key whose fence record name is, when it is one, in
// any of fence's three forms: leasehold_fence:{KEY} for a KEY without
// braces, leasehold_fence:KEY for a KEY with a hash tag, and
// leasehold_fence:{TAG}:KEY for a KEY whose braces make none (TAG a decimal
// string in KEY's slot). Fence gives the KEY {X} the record of X: it reads
// as X's.
func fenceResource(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, fenceRecordPrefix)
	if !ok {
		return "", false
	}
	if inner, ok := strings.CutPrefix(rest, "{"); ok {
		if key, ok := strings.CutSuffix(inner, "}"); ok && key != "" && !strings.ContainsAny(key, "{}") {
			return key, true
		}
		if tag, key, ok := strings.Cut(inner, "}:"); ok && decimal(tag) && strings.ContainsAny(key, "{}") &&
			keyslot.Hashed(key) == key && keyslot.Of(tag) == keyslot.Of(key) {
			return key, true
		}
	}
	if keyslot.Hashed(rest) != rest {
		return rest, true
	}
	return "", false
}

// decimal reports whether s is digits only, and not empty.
func decimal(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// parseHash reads the lock hash NAME into s: its kind (rlock, fair, rw,
// election, or a hash of something else), its owners and their holds, and
// an election's leader.
func parseHash(s *State, r *inspectReply) {
	s.Shape = ShapeRLock
	for i := 0; i+1 < len(r.fields); i += 2 {
		f, v := r.fields[i], r.fields[i+1]
		if f == "mode" {
			s.Shape, s.Mode = ShapeRW, v
			continue
		}
		if f == keptField {
			s.KeptBy = v
			continue
		}
		owner, write := strings.CutSuffix(f, ":write")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || !ownerLike(owner) {
			s.Foreign = append(s.Foreign, f)
			continue
		}
		s.Holders = append(s.Holders, Holder{Owner: owner, Count: n, Write: write, Reads: r.reads[f]})
	}
	if len(s.Foreign) > 0 || (s.Shape == ShapeRW && s.Mode != "read" && s.Mode != "write") {
		// A hash of something else: not ours to read, or to release.
		s.Shape, s.Holders = ShapeNotLock, nil
		return
	}
	if s.Shape == ShapeRLock && (len(r.queue) > 0 || len(r.deadlines) > 0) {
		s.Shape = ShapeFair
	}
	if s.Leader = parseLeader(r.leader, s.Holders); s.Leader != nil && s.Shape == ShapeRLock {
		s.Shape = ShapeElection
	}
	sort.Slice(s.Holders, func(i, j int) bool {
		a, b := s.Holders[i], s.Holders[j]
		if a.Write != b.Write {
			return a.Write
		}
		return a.Owner < b.Owner
	})
}

// parseSemaphore reads a semaphore's permits, claims and count (values 10
// to 12 of inspect.lua) when NAME is one: a string holding an integer, or
// no key but permits held. It returns nil for anything else.
func parseSemaphore(typ string, res []rueidis.RedisMessage, now int64) (*SemaphoreState, error) {
	held, err := scores(res[0])
	if err != nil {
		return nil, err
	}
	claimed, err := scores(res[1])
	if err != nil {
		return nil, err
	}
	sem := &SemaphoreState{}
	if count, err := res[2].ToString(); err == nil {
		if sem.Available, err = strconv.ParseInt(count, 10, 64); err != nil {
			return nil, nil // a string, but not a count: not a semaphore
		}
		sem.Set = true
	}
	if !sem.Set && (typ != "none" || len(held) == 0) {
		return nil, nil
	}
	for id, expiry := range held {
		p := Permit{ID: hex.EncodeToString([]byte(id)), Left: time.Duration(expiry-now) * time.Millisecond}
		p.Never = expiry == NonExpiring
		sem.Permits = append(sem.Permits, p)
	}
	sort.Slice(sem.Permits, func(i, j int) bool {
		a, b := sem.Permits[i], sem.Permits[j]
		if a.Never != b.Never {
			return b.Never
		}
		if a.Left != b.Left {
			return a.Left < b.Left
		}
		return a.ID < b.ID
	})
	sem.Claims = expiring(claimed, now)
	return sem, nil
}

// expiring makes waiters, sorted by owner, of owner -> expiry (ms).
func expiring(expiries map[string]int64, now int64) []Waiter {
	var out []Waiter
	for owner, expiry := range expiries {
		out = append(out, Waiter{Owner: owner, Left: time.Duration(expiry-now) * time.Millisecond, Known: true})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Owner < out[j].Owner })
	return out
}

// parseLeader reads the leader key's {value, token, owner} (inspect.lua's
// last value) into the election's leader, as Election's Leader does: nil
// unless the owner it names holds the lock (a key left over from a term
// that ended, or of another type, names no leader).
func parseLeader(m rueidis.RedisMessage, holders []Holder) *LeaderState {
	f, err := m.ToArray()
	if err != nil || len(f) != 3 {
		return nil
	}
	owner, err := f[2].ToString()
	if err != nil {
		return nil
	}
	for _, h := range holders {
		if h.Owner == owner {
			l := &LeaderState{Owner: owner}
			l.Value, _ = f[0].ToString()
			if tok, err := f[1].ToString(); err == nil {
				l.Term, _ = strconv.ParseUint(tok, 10, 64)
			}
			return l
		}
	}
	return nil
}

// ownerLike reports whether f has the shape of an owner field: leasehold's
// CLIENT_ID:LEASE_ID or Redisson's UUID:THREAD_ID, both ending in a number.
// It keeps a hash of counters from passing for a lock.
func ownerLike(f string) bool {
	i := strings.LastIndexByte(f, ':')
	if i <= 0 || i == len(f)-1 {
		return false
	}
	for _, r := range f[i+1:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// scores reads a flat ZRANGE WITHSCORES reply into member -> score.
func scores(m rueidis.RedisMessage) (map[string]int64, error) {
	flat, err := m.AsStrSlice()
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		f, err := strconv.ParseFloat(flat[i+1], 64)
		if err != nil {
			return nil, fmt.Errorf("score %q of %s: %w", flat[i+1], flat[i], err)
		}
		out[flat[i]] = int64(f)
	}
	return out, nil
}

// readHolds reads the script's {{reader, pttl...}, ...} into reader -> TTLs.
func readHolds(m rueidis.RedisMessage) (map[string][]time.Duration, error) {
	rows, err := m.ToArray()
	if err != nil {
		return nil, err
	}
	out := make(map[string][]time.Duration, len(rows))
	for _, row := range rows {
		vals, err := row.ToArray()
		if err != nil || len(vals) == 0 {
			return nil, fmt.Errorf("read holds: %v", err)
		}
		owner, err := vals[0].ToString()
		if err != nil {
			return nil, err
		}
		ttls := make([]time.Duration, 0, len(vals)-1)
		for _, v := range vals[1:] {
			n, err := v.AsInt64()
			if err != nil {
				return nil, err
			}
			ttls = append(ttls, fromPTTL(n))
		}
		out[owner] = ttls
	}
	return out, nil
}

// fromPTTL turns a PTTL reply into a duration: -1 (no expiry) stays -1ns,
// -2 (no key) is 0.
func fromPTTL(n int64) time.Duration {
	switch {
	case n == -2:
		return 0
	case n == -1:
		return -1
	}
	return time.Duration(n) * time.Millisecond
}
