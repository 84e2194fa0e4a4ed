package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/leasehold/leasehold/internal/lua"
)

// lockJSON is a lock as -json prints it, the same for inspect, list and
// watch. Scripts read these names: they stay. Every field is always there;
// null means "does not apply".
type lockJSON struct {
	Name string `json:"name"`
	// Kind is free, rlock, fair, rw, election, semaphore,
	// counter_or_unused_semaphore, fence or not_a_lock.
	Kind string `json:"kind"`
	// RedisType is the Redis type of the key NAME: hash for a held lock,
	// none when there is no key.
	RedisType string `json:"redis_type"`
	// Mode is read or write for a read-write lock, null otherwise.
	Mode *string `json:"mode"`
	// TTLms is the lock's remaining TTL in milliseconds: null when it is not
	// held, -1 when it never expires. A semaphore's is its soonest permit's.
	TTLms *int64 `json:"ttl_ms"`
	// Token is the last fencing token drawn, 0 if none yet.
	Token uint64 `json:"token"`
	// Holders are the owners holding the lock; a semaphore's are the leases
	// holding permits, each named by the first 28 hex digits its permits'
	// ids share, with its count of permits.
	Holders []holderJSON `json:"holders"`
	// Waiters are the fair lock's queue, oldest first.
	Waiters []waiterJSON `json:"waiters"`
	// WaitingWriters are a read-write lock's writers holding new readers
	// back (writer preference).
	WaitingWriters []waiterJSON `json:"waiting_writers"`
	// WaitingClients is, for an rlock, election or rw (whose waiters Redis
	// keeps no list of), how many Clients wait: the connections subscribed
	// to the lock's channel, one per Client however many of its goroutines
	// wait. null for the other kinds.
	WaitingClients *int64 `json:"waiting_clients"`
	// Time is when the snapshot was taken, by the Redis server's clock (RFC
	// 3339, UTC, milliseconds).
	Time string `json:"time"`
	// Semaphore is a semaphore's permits, null for a lock.
	Semaphore *semaphoreJSON `json:"semaphore"`
	// Leader is an election's leader, null when nobody leads.
	Leader *leaderJSON `json:"leader"`
	// Kept is a lock released sooner than its hold-at-least
	// (leasehold.WithHoldAtLeast) after its acquisition, taken by no holder
	// until then; null for any other.
	Kept *keptJSON `json:"kept"`
	// Value is the integer NAME holds when it is either a counter or an
	// unused semaphore (its permits, were it one); null for the other kinds.
	Value *int64 `json:"value"`
	// Fence is, for package fence's record of the last token applied to a
	// key, that key and token; null for the other kinds.
	Fence *fenceJSON `json:"fence"`
	// PrefixHint is, for inspect of a name with no lock, the locks whose
	// keys end with the name after another prefix (a Client's
	// leasehold.WithKeyPrefix); null when not looked for (a name that is
	// not free, list, watch).
	PrefixHint *prefixHintJSON `json:"prefix_hint"`
}

// fenceJSON is package fence's record of the last token applied to a key.
type fenceJSON struct {
	// Resource is the key whose writes are fenced, Token the last token
	// applied to it (a lower one is refused).
	Resource string `json:"resource"`
	Token    uint64 `json:"token"`
	// TTLms is the record's remaining TTL in milliseconds, -1 when it has
	// none (as long as the resource has none).
	TTLms int64 `json:"ttl_ms"`
}

// prefixHintJSON is what inspect found of a free name under other prefixes.
type prefixHintJSON struct {
	// Found are the locks whose keys end with the name, at most 5, by key.
	Found []prefixedJSON `json:"found"`
	// Complete is false when the search stopped before it looked at every
	// key (it is bounded in time and in SCAN calls) or found enough.
	Complete bool `json:"complete"`
}

// prefixedJSON is a lock found under another prefix.
type prefixedJSON struct {
	// Key is the lock's key, Prefix the -prefix that reads it by the name
	// given ("" when that is no -prefix), Kind its kind.
	Key    string `json:"key"`
	Prefix string `json:"prefix"`
	Kind   string `json:"kind"`
}

// keptJSON is a lock kept after its release (leasehold.WithHoldAtLeast).
type keptJSON struct {
	// ReleasedBy is the owner whose release left it kept.
	ReleasedBy string `json:"released_by"`
	// Until is when it is free, by the Redis server's clock (RFC 3339, UTC,
	// milliseconds); TTLms is how long until then, in milliseconds.
	Until  string      `json:"until"`
	TTLms  int64       `json:"ttl_ms"`
	Client *clientJSON `json:"client"`
}

// leaderJSON is an election's leader, from {NAME}:leader.
type leaderJSON struct {
	// Value is what the leader published (Campaign, Proclaim).
	Value string `json:"value"`
	// Term is the token of the leader's first campaign: election.Leader's
	// Token.
	Term uint64 `json:"term"`
	// Owner is the leader's owner field in NAME, one of Holders.
	Owner string `json:"owner"`
}

type semaphoreJSON struct {
	// Total is the permits available plus those held, Available the count
	// NAME holds (below 0 after permits held were taken away); both null
	// when the semaphore's permits were never set.
	Total     *int64 `json:"total"`
	Available *int64 `json:"available"`
	// Holders is how many leases hold permits.
	Holders int `json:"holders"`
	// Permits are those held, soonest expiry first.
	Permits []permitJSON `json:"permits"`
	// Claims are the waiters for several permits holding smaller takers
	// back, owner OWNER:N.
	Claims []waiterJSON `json:"claims"`
}

type permitJSON struct {
	// ID is the permit's id in hex, as Redisson's API names it.
	ID string `json:"id"`
	// TTLms is how long until its lease runs out, in milliseconds (0 or
	// less once it has: the next attempt gives it back); -1 when it never
	// expires (taken by Redisson without a lease time).
	TTLms  int64       `json:"ttl_ms"`
	Client *clientJSON `json:"client"`
}

// clientJSON is the connection of a holder's Client, from CLIENT LIST; null
// when none is known (a Client made by New, Redisson, CLIENT LIST refused).
type clientJSON struct {
	// Name is the Client's name (leasehold.WithClientName), Addr the address
	// of its connection as the server sees it.
	Name string `json:"name"`
	Addr string `json:"addr"`
}

type holderJSON struct {
	Owner string `json:"owner"`
	Count int64  `json:"count"`
	// Write is true for a read-write lock's write holds.
	Write bool `json:"write"`
	// ReadsTTLms are the remaining TTLs of a read-write lock's read holds of
	// the owner, one per hold, in milliseconds (0: that hold's key is gone,
	// -1: it never expires); null for other holds.
	ReadsTTLms []int64     `json:"reads_ttl_ms"`
	Client     *clientJSON `json:"client"`
}

type waiterJSON struct {
	Owner string `json:"owner"`
	// TTLms is how long the waiter keeps its place (a writer its
	// announcement) without asking again, in milliseconds; 0 or less once
	// that has passed, null when the waiter has no deadline.
	TTLms  *int64      `json:"ttl_ms"`
	Client *clientJSON `json:"client"`
}

// kindJSON is a kind as -json names it: one word, its spaces underscores.
func kindJSON(k lua.Shape) string { return strings.ReplaceAll(k.String(), " ", "_") }

// toJSON is s as -json prints it.
func toJSON(s *lock) lockJSON {
	j := lockJSON{
		Name:           s.shown(),
		Kind:           kindJSON(s.Shape),
		RedisType:      s.Type,
		Token:          s.Token,
		Holders:        make([]holderJSON, 0, len(s.Holders)),
		Waiters:        make([]waiterJSON, 0, len(s.Waiters)),
		WaitingWriters: make([]waiterJSON, 0, len(s.Writers)),
		Time:           s.At.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
	}
	if s.Shape == lua.ShapeRW {
		j.Mode = &s.Mode
	}
	if s.clients >= 0 {
		j.WaitingClients = &s.clients
	}
	if l := s.Leader; l != nil {
		j.Leader = &leaderJSON{Value: l.Value, Term: l.Term, Owner: l.Owner}
	}
	if s.KeptBy != "" {
		j.Kept = &keptJSON{ReleasedBy: s.KeptBy, Until: s.At.Add(s.TTL).UTC().Format("2006-01-02T15:04:05.000Z07:00"),
			TTLms: s.TTL.Milliseconds(), Client: clientToJSON(s.conn(s.KeptBy))}
	}
	if s.Held() && s.Semaphore == nil {
		ttl := int64(-1)
		if s.TTL >= 0 {
			ttl = s.TTL.Milliseconds()
		}
		j.TTLms = &ttl
	}
	for _, h := range s.Holders {
		hj := holderJSON{Owner: h.Owner, Count: h.Count, Write: h.Write, Client: clientToJSON(s.conn(h.Owner))}
		if s.Shape == lua.ShapeRW && !h.Write {
			hj.ReadsTTLms = make([]int64, len(h.Reads))
			for i, d := range h.Reads {
				hj.ReadsTTLms[i] = millis(d)
			}
		}
		j.Holders = append(j.Holders, hj)
	}
	for _, w := range s.Waiters {
		j.Waiters = append(j.Waiters, waiterToJSON(s, w))
	}
	for _, w := range s.Writers {
		j.WaitingWriters = append(j.WaitingWriters, waiterToJSON(s, w))
	}
	if s.Semaphore != nil {
		semaphoreToJSON(&j, s)
	}
	if s.Shape == lua.ShapeCounter {
		j.Value = &s.Count
	}
	if f := s.Fence; f != nil {
		j.Fence = &fenceJSON{Resource: f.Resource, Token: f.Token, TTLms: millis(s.TTL)}
	}
	if h := s.hint; h != nil {
		j.PrefixHint = &prefixHintJSON{Found: make([]prefixedJSON, 0, len(h.found)), Complete: h.complete}
		for _, p := range h.found {
			j.PrefixHint.Found = append(j.PrefixHint.Found, prefixedJSON{Key: p.key, Prefix: p.prefix, Kind: kindJSON(p.shape)})
		}
	}
	return j
}

// semaphoreToJSON sets j's semaphore, its holders (the leases holding
// permits) and its TTL (the soonest expiry of a permit held, as list's).
func semaphoreToJSON(j *lockJSON, s *lock) {
	sem := s.Semaphore
	sj := &semaphoreJSON{Holders: len(sem.Leases()), Permits: make([]permitJSON, 0, len(sem.Permits)),
		Claims: make([]waiterJSON, 0, len(sem.Claims))}
	if sem.Set {
		total, available := sem.Total(), sem.Available
		sj.Total, sj.Available = &total, &available
	}
	for i, p := range sem.Permits {
		ttl := p.Left.Milliseconds()
		if p.Never {
			ttl = -1
		}
		sj.Permits = append(sj.Permits, permitJSON{ID: p.ID, TTLms: ttl, Client: clientToJSON(s.permitConn(p.ID))})
		if i == 0 { // the soonest expiry, as list's TTL
			j.TTLms = &ttl
		}
	}
	for _, l := range sem.Leases() {
		j.Holders = append(j.Holders, holderJSON{Owner: l.ID, Count: l.Permits, Client: clientToJSON(s.permitConn(l.ID))})
	}
	for _, c := range sem.Claims {
		sj.Claims = append(sj.Claims, waiterToJSON(s, c))
	}
	j.Semaphore = sj
}

func clientToJSON(c *conn) *clientJSON {
	if c == nil {
		return nil
	}
	return &clientJSON{Name: c.name, Addr: c.addr}
}

// waiterToJSON is w, a waiter of s, as -json prints it.
func waiterToJSON(s *lock, w lua.Waiter) waiterJSON {
	wj := waiterJSON{Owner: w.Owner, Client: clientToJSON(s.conn(w.Owner))}
	if w.Known {
		left := w.Left.Milliseconds()
		wj.TTLms = &left
	}
	return wj
}

// millis is a TTL in milliseconds, keeping -1 for "never expires".
func millis(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Milliseconds()
}

// renderJSON writes s as one line of JSON.
func renderJSON(w io.Writer, s *lock) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // lock names such as a<b stay readable
	return enc.Encode(toJSON(s))
}

// jsonFlag registers -json, and -o FORMAT for those who type kubectl's
// form, on fs, setting *asJSON. Its default is *asJSON, so that a -json
// before the command carries over to the command's flags.
func jsonFlag(fs *flag.FlagSet, asJSON *bool) {
	fs.BoolVar(asJSON, "json", *asJSON, "print JSON: one object per lock, one a line")
	fs.Func("o", "output `format`: text (default) or json, as -json", func(v string) error {
		switch v {
		case "json":
			*asJSON = true
		case "text":
			*asJSON = false
		default:
			return fmt.Errorf("unknown format %q: text or json", v)
		}
		return nil
	})
}
