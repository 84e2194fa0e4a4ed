package core

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/retry"
)

// errUntracked wraps the reason a server gives the guard no invalidations:
// it refused CLIENT TRACKING (an ACL, a server without it), or the
// connection speaks RESP2, which has no push messages for them.
var errUntracked = errors.New("CLIENT TRACKING unavailable")

// tracking is the guard's view of Redis: a dedicated connection of the
// Client's rueidis client per node, with CLIENT TRACKING on, so that every
// read made on it is tracked and the invalidations it earns come back on it,
// to the hook (rueidis' SetOnInvalidations). Any rueidis client has them,
// whether it was made with a client-side cache or not, and whoever made it:
// rueidis takes ClientOption.OnInvalidations only at creation.
//
// On a single Redis, and under Sentinel, that is one connection, to the
// primary rueidis sends its commands to: made again when rueidis moves to
// another (a Sentinel failover), since locks are then taken there. In Redis
// Cluster a key's read must go to the node that holds its slot, whose
// connection then hears of the key: the slot map is read from the cluster
// (CLUSTER SLOTS), corrected by MOVED replies and read again after a failed
// read, and a connection is made to a primary when a key on it is first read.
//
// Only the guard's goroutine uses it, but for the hook, which rueidis calls
// on its own.
type tracking struct {
	rc      rueidis.Client
	cluster bool
	hook    func(keys []rueidis.RedisMessage)

	conns map[string]*trackConn // by node address (see primary for "")
	slots []string              // Redis Cluster: the primary of each slot; nil until read
	stale bool                  // the slot map is to be read again before the next read
}

// trackConn is one node's tracking connection.
type trackConn struct {
	dc   rueidis.DedicatedClient
	gone <-chan error // closed once the connection is gone
}

func newTracking(rc rueidis.Client, hook func([]rueidis.RedisMessage)) *tracking {
	return &tracking{rc: rc, cluster: rc.Mode() == rueidis.ClientModeCluster, hook: hook, conns: make(map[string]*trackConn)}
}

// probe makes the first connection (in Redis Cluster, to the primary of the
// first slot), to learn whether the server offers tracking: an error
// wrapping errUntracked when it does not.
func (t *tracking) probe(ctx context.Context) error {
	var addr string
	if t.cluster {
		if err := t.readSlots(ctx); err != nil {
			return err
		}
		addr = t.slots[0]
	} else {
		addr = t.primary()
	}
	_, _, err := t.conn(ctx, addr)
	return err
}

// primary is the address of the node rueidis sends commands to, outside
// Redis Cluster: the server's, or under Sentinel the current primary's; ""
// when rueidis names several (a client that reads from replicas), which
// Dedicate then chooses between.
func (t *tracking) primary() string {
	nodes := t.rc.Nodes()
	if len(nodes) != 1 {
		return ""
	}
	for addr := range nodes {
		return addr
	}
	return ""
}

// conn returns the tracking connection to addr, made afresh when there is
// none or the last one is gone; again reports that it replaced one, whose
// tracked keys must be read again on the new one (invalidations were lost
// with it).
func (t *tracking) conn(ctx context.Context, addr string) (c *trackConn, again bool, err error) {
	if !t.cluster {
		for other, oc := range t.conns {
			if other != addr {
				// rueidis moved to another primary: so do the reads.
				oc.dc.Close()
				delete(t.conns, other)
				again = true
			}
		}
	}
	c = t.conns[addr]
	if c != nil {
		select {
		case <-c.gone:
		default:
			return c, false, nil
		}
		c.dc.Close()
		delete(t.conns, addr)
		again = true
	}
	if c, err = t.dial(ctx, addr); err != nil {
		return nil, again, err
	}
	t.conns[addr] = c
	return c, again, nil
}

// dial makes a tracking connection to addr, in one round trip: CLIENT
// TRACKING is turned off (rueidis turns it on in OPTIN mode on a caching
// client's connections) and on again in its default mode, where every read
// is tracked, so that a read is one command; HELLO, without arguments,
// tells the connection's protocol (its reply is a map in RESP3, an array in
// RESP2) and changes nothing. Outside Redis Cluster, INFO replication tells
// whether the server is a primary: a connection made during a failover may
// reach the old primary, now a replica, whose copy of a lock taken on the
// new one may not have arrived (in Redis Cluster a replica answers a read
// with MOVED).
func (t *tracking) dial(ctx context.Context, addr string) (*trackConn, error) {
	rc := t.rc
	if t.cluster || addr != "" {
		// In Redis Cluster always a node's own client: a dedicated
		// connection of the cluster client serves one slot only.
		if rc = t.rc.Nodes()[addr]; rc == nil {
			t.stale = true
			return nil, fmt.Errorf("tracking: no connection to %q, the primary of a slot", addr)
		}
	}
	// Dedicate takes no ctx: on a single Redis it dials at once, bounded
	// by the rueidis client's dial timeout.
	dc, release := rc.Dedicate()
	if dc == nil { // a wrapper of rueidis.Client that has none to give
		if release != nil {
			release()
		}
		return nil, fmt.Errorf("%w: the rueidis client gives no dedicated connection", errUntracked)
	}
	cmds := rueidis.Commands{dc.B().ClientTracking().Off().Build(), dc.B().ClientTracking().On().Build(),
		dc.B().Hello().Build()}
	if !t.cluster {
		cmds = append(cmds, dc.B().Info().Section("replication").Build())
	}
	res := dc.DoMulti(ctx, cmds...)
	err := res[1].Error()
	switch {
	case err != nil && retry.Classify(err) == retry.Final:
		err = fmt.Errorf("%w: %w", errUntracked, err)
	case err != nil:
	case resp2(res[2]):
		err = fmt.Errorf("%w: the connection speaks RESP2, which carries no invalidations to it", errUntracked)
	case !t.cluster && replica(res[3]):
		err = errors.New("tracking: the server is a replica (a failover under way?)")
	}
	if err != nil {
		dc.Close()
		return nil, err
	}
	// Nothing is tracked before the first read, which comes after this.
	return &trackConn{dc: dc, gone: dc.SetOnInvalidations(t.hook)}, nil
}

// resp2 reports whether the reply to HELLO says the connection speaks
// RESP2. A server that wants HELLO's protocol version (Redis 6.0) says
// nothing: rueidis speaks RESP3 unless told otherwise.
func resp2(r rueidis.RedisResult) bool {
	m, err := r.ToMessage()
	return err == nil && !m.IsMap()
}

// replica reports whether INFO replication's reply says the server is a
// replica. An ACL that refuses INFO says nothing.
func replica(r rueidis.RedisResult) bool {
	info, _ := r.ToString()
	return strings.Contains(info, "role:slave")
}

// read runs reads (each of one key) on the tracking connections of their
// keys' nodes, one pipeline per node, and returns their replies and the
// addresses of nodes whose connection was made again. A read that went to
// a node no longer holding its slot is answered by the MOVED reply, which
// corrects the slot map for the next try.
func (t *tracking) read(ctx context.Context, reads []rueidis.Completed) (res []rueidis.RedisResult, again []string) {
	res = make([]rueidis.RedisResult, len(reads))
	byNode := make(map[string][]int)
	if t.cluster && (t.slots == nil || t.stale) {
		if err := t.readSlots(ctx); err != nil && t.slots == nil {
			for i := range res {
				res[i] = rueidis.NewErrorResult(err)
			}
			return res, nil
		}
	}
	primary := ""
	if !t.cluster {
		primary = t.primary()
	}
	for i, cmd := range reads {
		addr := primary
		if t.cluster {
			addr = t.slots[cmd.Slot()]
		}
		byNode[addr] = append(byNode[addr], i)
	}
	type batch struct {
		c   *trackConn
		idx []int
	}
	var batches []batch
	for addr, idx := range byNode {
		c, redo, err := t.conn(ctx, addr)
		if redo {
			again = append(again, addr)
		}
		if err != nil {
			for _, i := range idx {
				res[i] = rueidis.NewErrorResult(err)
			}
			continue
		}
		batches = append(batches, batch{c, idx})
	}
	var wg sync.WaitGroup
	for _, b := range batches {
		wg.Go(func() {
			cmds := make(rueidis.Commands, len(b.idx))
			for j, i := range b.idx {
				cmds[j] = reads[i]
			}
			for j, r := range b.c.dc.DoMulti(ctx, cmds...) {
				res[b.idx[j]] = r
			}
		})
	}
	wg.Wait()
	for i, r := range res {
		t.moved(reads[i].Slot(), r.Error())
	}
	return res, again
}

// moved corrects the slot map after a reply to a read of slot: MOVED names
// the slot's primary; a connection lost or refused may mean a failover, so
// the map is read again before the next read.
func (t *tracking) moved(slot uint16, err error) {
	if !t.cluster || err == nil {
		return
	}
	if e, ok := rueidis.IsRedisErr(err); ok {
		if addr, ok := e.IsMoved(); ok {
			t.slots[slot] = addr
			t.stale = true
		}
		return
	}
	t.stale = true
}

// readSlots reads the slot map from the first node that answers CLUSTER
// SLOTS, naming nodes as rueidis does (a node that does not know its own
// address is the one asked).
func (t *tracking) readSlots(ctx context.Context) error {
	err := errors.New("tracking: no node to read the slot map from")
	for addr, node := range t.rc.Nodes() {
		var reply []rueidis.RedisMessage
		if reply, err = node.Do(ctx, node.B().ClusterSlots().Build()).ToArray(); err != nil {
			continue
		}
		slots := make([]string, 16384)
		for _, r := range reply {
			v, _ := r.ToArray()
			if len(v) < 3 {
				continue
			}
			from, _ := v[0].AsInt64()
			to, _ := v[1].AsInt64()
			primary := endpoint(addr, v[2])
			for s := max(from, 0); s <= min(to, 16383) && primary != ""; s++ {
				slots[s] = primary
			}
		}
		t.slots, t.stale = slots, false
		return nil
	}
	return err
}

// endpoint is the address of a node in a CLUSTER SLOTS reply, [host, port,
// ...]: an empty host is the node asked's (fallback's); "?" is unknown.
func endpoint(fallback string, node rueidis.RedisMessage) string {
	v, _ := node.ToArray()
	if len(v) < 2 {
		return ""
	}
	host, _ := v[0].ToString()
	port, _ := v[1].AsInt64()
	switch host {
	case "":
		host, _, _ = net.SplitHostPort(fallback)
	case "?":
		return ""
	}
	return net.JoinHostPort(host, strconv.FormatInt(port, 10))
}

// close closes every tracking connection.
func (t *tracking) close() {
	for addr, c := range t.conns {
		c.dc.Close()
		delete(t.conns, addr)
	}
}
