package main

import (
	"context"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/lua"
)

// A leasehold Client made by Open names its connections NAME/ID
// (leasehold.WithClientName): NAME says which process it is (HOST:PID by
// default), ID is the Client's UUID, which starts every owner field its locks
// write (ID:LEASE). So CLIENT LIST tells which connection, and so which
// process, holds a lock. A Client made by New over the caller's rueidis
// client, and Redisson, name their connections otherwise: their holders show
// none.

// conn is the connection a Client is named on, as CLIENT LIST shows it.
type conn struct {
	name string // NAME, without the /ID
	addr string // the client's address, as the server sees it
}

func (c *conn) String() string {
	if c == nil {
		return "-"
	}
	return c.name + " at " + c.addr
}

// clients finds Clients' connections by their ID in CLIENT LIST (run on
// every node). It reads CLIENT LIST again only when the holders it is asked
// about change, so that watch does not run it on every look. It finds none
// when CLIENT LIST is refused (an ACL without +client|list).
type clients struct {
	rc     rueidis.Client
	asked  string           // the IDs of the last annotate, to tell a change
	byID   map[string]*conn // Client ID -> its oldest connection
	byHead map[string]*conn // the first 16 hex digits of the ID -> the same
}

func newClients(rc rueidis.Client) *clients { return &clients{rc: rc} }

// annotate gives the locks the connections of their holders, waiters,
// semaphore permits and releasers of kept locks whose Client is connected
// and named after its ID.
func (cl *clients) annotate(ctx context.Context, locks ...*lock) {
	var asked []string
	for _, s := range locks {
		for _, h := range s.Holders {
			asked = append(asked, ownerClient(h.Owner))
		}
		if s.KeptBy != "" {
			asked = append(asked, ownerClient(s.KeptBy))
		}
		for _, w := range s.waiting() {
			asked = append(asked, ownerClient(w.Owner))
		}
		if s.Semaphore != nil {
			for _, p := range s.Semaphore.Permits {
				asked = append(asked, permitHead(p.ID))
			}
		}
	}
	if key := strings.Join(asked, " "); key != cl.asked {
		cl.asked = key
		cl.read(ctx)
	}
	for _, s := range locks {
		s.byID, s.byHead = cl.byID, cl.byHead
	}
}

// waiting are the lock's waiters of every sort: the fair queue, the waiting
// writers, a semaphore's claims.
func (s *lock) waiting() []lua.Waiter {
	ws := append(append([]lua.Waiter(nil), s.Waiters...), s.Writers...)
	if s.Semaphore != nil {
		ws = append(ws, s.Semaphore.Claims...)
	}
	return ws
}

// read runs CLIENT LIST on every node and keeps, for each Client ID found in
// a connection name, its oldest connection (the lowest id: the one Open
// made first, which carries its scripts and subscriptions).
func (cl *clients) read(ctx context.Context) {
	cl.byID, cl.byHead = map[string]*conn{}, map[string]*conn{}
	oldest := map[string]int64{}
	for _, node := range cl.rc.Nodes() {
		list, err := node.Do(ctx, node.B().ClientList().Build()).ToString()
		if err != nil {
			continue // refused, or the node is down: its holders show none
		}
		for line := range strings.Lines(list) {
			f := clientFields(line)
			name, id, ok := cutClientID(f["name"])
			if !ok {
				continue
			}
			n, _ := strconv.ParseInt(f["id"], 10, 64)
			if c := cl.byID[id]; c != nil && oldest[id] <= n {
				continue
			}
			c := &conn{name: name, addr: f["addr"]}
			oldest[id], cl.byID[id], cl.byHead[idHead(id)] = n, c, c
		}
	}
}

// clientFields reads one line of CLIENT LIST, key=value pairs separated by
// spaces (a name holds no space: Redis refuses one).
func clientFields(line string) map[string]string {
	f := map[string]string{}
	for kv := range strings.FieldsSeq(line) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			f[k] = v
		}
	}
	return f
}

// cutClientID splits a connection name NAME/ID, ID a UUID.
func cutClientID(s string) (name, id string, ok bool) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 || !isUUID(s[i+1:]) {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}

// isUUID reports whether s has the shape of a UUID: 36 characters, hex
// digits and dashes at 8, 13, 18 and 23.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		switch i {
		case 8, 13, 18, 23:
			if r != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
				return false
			}
		}
	}
	return true
}

// ownerClient is the Client ID an owner field starts with: ID:LEASE
// (leasehold), UUID:THREAD (Redisson).
func ownerClient(owner string) string {
	id, _, _ := strings.Cut(owner, ":")
	return id
}

// idHead is the first 16 hex digits of a Client ID, which a leasehold permit
// id carries (lua.PermitPrefix).
func idHead(id string) string {
	return strings.ToLower(strings.ReplaceAll(id, "-", ""))[:16]
}

// permitHead is the first 16 hex digits of a permit id in hex: the head of
// its Client's ID, for a permit leasehold took.
func permitHead(hexID string) string {
	if len(hexID) < 16 {
		return ""
	}
	return hexID[:16]
}
