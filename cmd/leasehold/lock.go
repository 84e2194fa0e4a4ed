package main

import (
	"context"
	_ "embed"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/script"
)

//go:embed inspect.lua
var inspectSource string

// inspectScript reads a whole lock in one atomic step, so that what is shown
// never mixes two states (a holder from before a release with a queue from
// after it).
var inspectScript = rueidis.NewLuaScript(inspectSource)

// kind is what a key holds, as far as locks go.
type kind int

const (
	kindFree      kind = iota // no lock (perhaps a fencing counter or a queue)
	kindRLock                 // reentrant lock (or a fair lock nobody waits for)
	kindFair                  // fair lock with waiters
	kindRW                    // read-write lock
	kindElection              // election: an rlock whose holder leads, named by {NAME}:leader
	kindSemaphore             // semaphore: NAME a string holding its permits available
	kindNotLock               // a key that is not a lock
)

func (k kind) String() string {
	switch k {
	case kindRLock:
		return "rlock"
	case kindFair:
		return "fair"
	case kindRW:
		return "rw"
	case kindElection:
		return "election"
	case kindSemaphore:
		return "semaphore"
	case kindNotLock:
		return "not a lock"
	}
	return "free"
}

// holder is one owner's holds on a lock.
type holder struct {
	owner string // CLIENT_ID:LEASE_ID (leasehold) or UUID:THREAD_ID (Redisson)
	count int64
	write bool // a read-write lock's write holds (field OWNER:write)
	// reads are the remaining TTLs of a read-write lock's read holds of
	// owner, one per hold; a hold whose key is gone shows as 0.
	reads []time.Duration
	// client is the connection of the owner's Client (see clients), nil
	// when none is known.
	client *conn
}

// waiter is a fair-lock waiter, or a waiting writer of a read-write lock.
type waiter struct {
	owner string
	// left is how long the waiter keeps its place (or the writer its
	// announcement) without asking again; negative once that has passed.
	left time.Duration
	// known is false for a queued owner with no deadline: the next attempt
	// of any waiter removes it.
	known bool
	// client is the connection of the owner's Client (see clients), nil
	// when none is known.
	client *conn
}

// lockState is one snapshot of a lock.
type lockState struct {
	name    string
	kind    kind
	redis   string        // the Redis type of NAME ("none" when absent)
	mode    string        // rw: "read" or "write"
	ttl     time.Duration // remaining TTL of NAME; -1 when it has none
	token   uint64        // last fencing token drawn; 0 when none yet
	holders []holder      // sorted: writers first, then by owner
	waiters []waiter      // fair queue, oldest first
	writers []waiter      // rw: waiting writers (writer preference)
	foreign []string      // fields of a hash that do not look like a lock
	at      time.Time     // when the snapshot was taken, by the server's clock
	sem     *semState     // a semaphore's permits; nil for a lock
	leader  *leaderState  // an election's leader; nil when nobody leads
}

// leaderState is an election's leader, as {NAME}:leader names it
// (script.Keys.Leader).
type leaderState struct {
	value string // what the leader published
	term  uint64 // the token of its first campaign
	owner string // its owner field in NAME
}

// semState is a semaphore's permits.
type semState struct {
	// set is false when NAME holds no count (never set, or deleted while
	// permits were held): takers wait.
	set       bool
	available int64    // NAME's count: may be below 0 after permits were taken away
	permits   []permit // held, soonest expiry first
	claims    []waiter // waiters for several permits, owner OWNER:N
}

// permit is one permit held.
type permit struct {
	id     string        // hex, as Java's API names it
	left   time.Duration // until its lease runs out; 0 or less once it has
	never  bool          // taken by Redisson without a lease: never expires
	client *conn         // the connection of the Client that took it, nil when none is known
}

// total is the semaphore's permits, available and held.
func (s *semState) total() int64 { return s.available + int64(len(s.permits)) }

// holders is how many leases hold permits.
func (s *semState) holders() int { return len(s.leases()) }

// semLease is one lease's permits.
type semLease struct {
	id      string // the first 28 hex digits its permits' ids share
	permits int64
	client  *conn
}

// leases are the leases holding permits, in the order of their soonest
// permit: leasehold's permits of one lease share their first 14 bytes
// (lua.PermitPrefix); Redisson's ids are random, each its own.
func (s *semState) leases() []semLease {
	var out []semLease
	at := map[string]int{}
	for _, p := range s.permits {
		id := p.id[:min(len(p.id), 28)]
		i, ok := at[id]
		if !ok {
			i, at[id] = len(out), len(out)
			out = append(out, semLease{id: id, client: p.client})
		}
		out[i].permits++
	}
	return out
}

// held reports whether anyone holds the lock, or a permit of the semaphore.
func (s *lockState) held() bool {
	return len(s.holders) > 0 || (s.sem != nil && len(s.sem.permits) > 0)
}

// readState takes one snapshot of the lock name.
func readState(ctx context.Context, rc rueidis.Client, name string) (*lockState, error) {
	res, err := inspectScript.Exec(ctx, rc, inspectKeys(name), []string{script.KeysOf(name).RWPrefix}).ToArray()
	if err != nil {
		return nil, fmt.Errorf("inspect %s: %w", name, err)
	}
	return parseState(name, res)
}

// inspectKeys are the keys inspect.lua reads for the lock name.
func inspectKeys(name string) []string {
	k := script.KeysOf(name)
	return []string{name, k.Token, k.FairQueue, k.FairTimeout, k.Writers, k.SemaphoreTimeout, k.SemaphoreClaims, k.Leader}
}

func parseState(name string, res []rueidis.RedisMessage) (*lockState, error) {
	if len(res) != 13 {
		return nil, fmt.Errorf("inspect %s: %d values from the script, want 13", name, len(res))
	}
	s := &lockState{name: name}
	var err error
	if s.redis, err = res[0].ToString(); err != nil {
		return nil, err
	}
	pttl, err := res[1].AsInt64()
	if err != nil {
		return nil, err
	}
	s.ttl = ms(pttl)
	fields, err := res[2].AsStrSlice()
	if err != nil {
		return nil, err
	}
	if tok, err := res[3].ToString(); err == nil {
		s.token, _ = strconv.ParseUint(tok, 10, 64)
	}
	queue, err := res[4].AsStrSlice()
	if err != nil {
		return nil, err
	}
	deadlines, err := scores(res[5])
	if err != nil {
		return nil, err
	}
	announced, err := scores(res[6])
	if err != nil {
		return nil, err
	}
	now, err := res[7].AsInt64()
	if err != nil {
		return nil, err
	}
	reads, err := readHolds(res[8])
	if err != nil {
		return nil, err
	}
	s.at = time.UnixMilli(now)
	if s.sem, err = parseSemaphore(s.redis, res[9:12], now); err != nil {
		return nil, err
	}

	for _, owner := range queue {
		w := waiter{owner: owner}
		if d, ok := deadlines[owner]; ok {
			w.left, w.known = time.Duration(d-now)*time.Millisecond, true
		}
		s.waiters = append(s.waiters, w)
	}
	for owner, d := range announced {
		s.writers = append(s.writers, waiter{owner: owner, left: time.Duration(d-now) * time.Millisecond, known: true})
	}
	sort.Slice(s.writers, func(i, j int) bool { return s.writers[i].owner < s.writers[j].owner })

	switch {
	case s.sem != nil:
		s.kind = kindSemaphore
		return s, nil
	case s.redis == "none":
		s.kind = kindFree
		if len(queue) > 0 {
			s.kind = kindFair // free, but with waiters about to take it
		}
		return s, nil
	case s.redis != "hash":
		s.kind = kindNotLock
		return s, nil
	}
	s.kind = kindRLock
	for i := 0; i+1 < len(fields); i += 2 {
		f, v := fields[i], fields[i+1]
		if f == "mode" {
			s.kind, s.mode = kindRW, v
			continue
		}
		owner, write := strings.CutSuffix(f, ":write")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || !ownerLike(owner) {
			s.foreign = append(s.foreign, f)
			continue
		}
		h := holder{owner: owner, count: n, write: write}
		h.reads = reads[f]
		s.holders = append(s.holders, h)
	}
	if len(s.foreign) > 0 || (s.kind == kindRW && s.mode != "read" && s.mode != "write") {
		// A hash of something else: not ours to read, or to release.
		s.kind, s.holders = kindNotLock, nil
		return s, nil
	}
	if s.kind == kindRLock && (len(queue) > 0 || len(deadlines) > 0) {
		s.kind = kindFair
	}
	if s.leader = parseLeader(res[12], s.holders); s.leader != nil && s.kind == kindRLock {
		s.kind = kindElection
	}
	sort.Slice(s.holders, func(i, j int) bool {
		a, b := s.holders[i], s.holders[j]
		if a.write != b.write {
			return a.write
		}
		return a.owner < b.owner
	})
	return s, nil
}

// parseSemaphore reads a semaphore's permits, claims and count (the last
// three values of inspect.lua) when NAME is one: a string holding an integer,
// or no key but permits held. It returns nil for anything else.
func parseSemaphore(typ string, res []rueidis.RedisMessage, now int64) (*semState, error) {
	held, err := scores(res[0])
	if err != nil {
		return nil, err
	}
	claimed, err := scores(res[1])
	if err != nil {
		return nil, err
	}
	sem := &semState{}
	if count, err := res[2].ToString(); err == nil {
		if sem.available, err = strconv.ParseInt(count, 10, 64); err != nil {
			return nil, nil // a string, but not a count: not a semaphore
		}
		sem.set = true
	}
	if !sem.set && (typ != "none" || len(held) == 0) {
		return nil, nil
	}
	for id, expiry := range held {
		p := permit{id: hex.EncodeToString([]byte(id)), left: time.Duration(expiry-now) * time.Millisecond}
		p.never = expiry == lua.NonExpiring
		sem.permits = append(sem.permits, p)
	}
	sort.Slice(sem.permits, func(i, j int) bool {
		a, b := sem.permits[i], sem.permits[j]
		if a.never != b.never {
			return b.never
		}
		if a.left != b.left {
			return a.left < b.left
		}
		return a.id < b.id
	})
	for owner, expiry := range claimed {
		sem.claims = append(sem.claims, waiter{owner: owner, left: time.Duration(expiry-now) * time.Millisecond, known: true})
	}
	sort.Slice(sem.claims, func(i, j int) bool { return sem.claims[i].owner < sem.claims[j].owner })
	return sem, nil
}

// parseLeader reads the leader key's {value, token, owner} (inspect.lua's
// last value) into the election's leader, as election's Leader does: nil
// unless the owner it names holds the lock (a key left over from a term
// that ended, or of another type, names no leader).
func parseLeader(m rueidis.RedisMessage, holders []holder) *leaderState {
	f, err := m.ToArray()
	if err != nil || len(f) != 3 {
		return nil
	}
	owner, err := f[2].ToString()
	if err != nil {
		return nil
	}
	for _, h := range holders {
		if h.owner == owner {
			l := &leaderState{owner: owner}
			l.value, _ = f[0].ToString()
			if tok, err := f[1].ToString(); err == nil {
				l.term, _ = strconv.ParseUint(tok, 10, 64)
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
			ttls = append(ttls, ms(n))
		}
		out[owner] = ttls
	}
	return out, nil
}

// ms turns a PTTL reply into a duration: -1 (no expiry) stays -1ns, -2 (no
// key) is 0.
func ms(n int64) time.Duration {
	switch {
	case n == -2:
		return 0
	case n == -1:
		return -1
	}
	return time.Duration(n) * time.Millisecond
}

// forceRelease deletes the lock whoever holds it and wakes its waiters the
// way its kind does, through the scripts leasehold's own ForceRelease runs.
// It reports whether there was a lock to delete.
func forceRelease(ctx context.Context, rc rueidis.Client, s *lockState) (bool, error) {
	switch s.kind {
	case kindRLock, kindElection:
		// The leader's next renewal finds NAME gone, deletes {NAME}:leader
		// and tells the observers; the unlock message wakes a campaigner.
		return lua.NewLock(s.name, lua.Config{}).ForceRelease(ctx, rc)
	case kindFair:
		return lua.NewFair(s.name, lua.Config{}).ForceRelease(ctx, rc)
	case kindRW:
		return lua.NewWrite(s.name, lua.Config{}).ForceRelease(ctx, rc)
	}
	return false, nil
}
