package leasehold

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/core"
	"github.com/leasehold/leasehold/lease"
)

// Client is a connection to Redis shared by every lock made from it. Safe
// for concurrent use: make one per process and Close it on the way out.
type Client struct {
	// c is the Client's state, and the Client's only field: the lock kinds
	// read it through a pointer to the Client (internal/clientcore).
	c core.Client
}

// core is the Client's state, as the lock kinds run on it.
func (c *Client) core() *core.Client { return &c.c }

// Open dials Redis with rueidis' own options (addresses, auth, TLS, Sentinel,
// Cluster) and wraps the new client; Close closes it. It fails, wrapping
// lease.ErrRedis, on a read-only replica, and warns of settings that put
// locks at risk (an evicting memory policy, an ACL refusing PUBLISH or
// CLIENT TRACKING). It uses one connection per node (unless opt sets
// PipelineMultiplex) and one more to hear of releases and removals, and no
// client-side cache: leasehold reads nothing through one, so opt's
// DisableCache and OnInvalidations are not used. Unless opt sets
// MaxFlushDelay, it is 20µs: with commands of several goroutines in flight,
// the connection's writer waits up to that long after a write to send more
// at once, which saves system calls, the server's too, under load; a lone
// command is never delayed (a negative MaxFlushDelay turns it off).
// docs/go-redis.md has the costs. Its errors name no lock, so they are no
// *lease.Error: they read "leasehold: open: ...", name the address and what
// went wrong in terms of opt's fields, and wrap lease.ErrInvalid (a bad
// option), lease.ErrRedis with Redis' reply (a server that refused: a
// replica, a wrong password) or the error rueidis met, with
// syscall.ECONNREFUSED when nothing listens and context.DeadlineExceeded
// when nothing answered in time (docs/go-redis.md, "When Open fails").
func Open(opt rueidis.ClientOption, opts ...Option) (*Client, error) {
	o, err := resolve(opts)
	if err != nil {
		return nil, opErr("open", err)
	}
	if opt.ClientName == "" {
		// Named before the Client exists: it takes the id given here.
		o.ID = core.NewID()
		opt.ClientName = o.name + "/" + o.ID
	}
	if opt.PipelineMultiplex == 0 {
		opt.PipelineMultiplex = -1 // rueidis reads a negative value as 2^0 = 1 connection
	}
	if opt.MaxFlushDelay == 0 {
		opt.MaxFlushDelay = flushDelay
	}
	// Invalidations reach the Client on its tracking connection. A cache
	// on the connection that runs the scripts would only cost: its CLIENT
	// TRACKING at each dial, and, with an OnInvalidations hook, rueidis'
	// pipelined mode, where every command crosses two goroutines.
	opt.DisableCache, opt.OnInvalidations = true, nil
	rc, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, opErr("open", dialErr(opt, err))
	}
	c, err := newClient(rc, true, o)
	if err != nil {
		rc.Close()
		return nil, opErr("open", err)
	}
	return c, nil
}

// flushDelay is Open's rueidis MaxFlushDelay, unless opt sets one: rueidis
// suggests about 20µs, which on loopback, 64 goroutines each locking a key
// of its own, saves a tenth to a sixth of the time per lock and of Redis'
// CPU, and delays no lone command (BenchmarkParallelDistinct, docs/benchmarks.md).
const flushDelay = 20 * time.Microsecond

// newClient reads the server rc runs on (see inspect), refuses one the
// Client cannot work on, and makes the Client, which then warns of what the
// server's settings put at risk.
func newClient(rc rueidis.Client, owned bool, o options) (*Client, error) {
	s, err := inspect(rc, o.classic, o.KeyPrefix)
	if err != nil {
		return nil, err
	}
	if err := s.check(rc.Mode(), strings.Join(slices.Sorted(maps.Keys(rc.Nodes())), ", ")); err != nil {
		return nil, err
	}
	o.Sharded, o.MemoryPolicy = s.sharded, s.policy
	c := core.NewClient(rc, owned, o.Options)
	for _, w := range s.warnings() {
		c.Warn(w)
	}
	return (*Client)(unsafe.Pointer(c)), nil
}

// New wraps a rueidis client the caller already has; Close leaves it open.
// Holders and waiters hear of removals and expiries as with Open, on a
// connection of its own (see Stats.Tracking). Its errors are as Open's,
// reading "leasehold: new: ...", but for the dial's, which rueidis.NewClient
// returned already.
func New(client rueidis.Client, opts ...Option) (*Client, error) {
	if client == nil {
		return nil, fmt.Errorf("leasehold: new: %w: nil rueidis client", lease.ErrInvalid)
	}
	o, err := resolve(opts)
	if err != nil {
		return nil, opErr("new", err)
	}
	c, err := newClient(client, false, o)
	if err != nil {
		return nil, opErr("new", err)
	}
	return c, nil
}

// ID is the Client's unique id, a random UUID: the CLIENT_ID in the owner
// field CLIENT_ID:LEASE_ID that its locks write in Redis.
func (c *Client) ID() string { return c.core().ID() }

// Close reports the leases the Client still holds lost with
// lease.ErrClosed, releases their locks (best effort), and returns once its
// goroutines have ended, within 5s however Redis answers. Later calls on its
// locks return lease.ErrClosed. It always returns nil.
func (c *Client) Close() error {
	c.core().Close()
	return nil
}

// Stats is a snapshot of a Client's counters, for tests and dashboards.
type Stats struct {
	// Leases is the number of holds the Client keeps: one per owner holding
	// a lock (reentrant leases share their first lease's hold).
	Leases int
	// RenewalRounds counts the watchdog's renewal rounds: one pipelined
	// round trip each, whatever the number of leases.
	RenewalRounds uint64
	// Subscriptions is the number of channels subscribed for waiters.
	Subscriptions int
	// Waiters is the number of goroutines waiting for a wake-up.
	Waiters int
	// Wakeups counts the wake-ups delivered to waiters.
	Wakeups uint64
	// MemoryPolicy is the server's maxmemory-policy as read at Open or New
	// ("" when INFO was refused). Any but noeviction can evict lock keys
	// once memory fills; the Client warns of it when a maxmemory is set.
	MemoryPolicy string
	// Tracking reports whether a holder hears at once (within a round trip
	// or two) that its lock was removed from Redis behind its back: a DEL,
	// FLUSHALL, an eviction, an expiry, a force release. The Client reads
	// its holds on a connection of its own per node with CLIENT TRACKING on.
	// False where the server refuses CLIENT TRACKING (an ACL, a server
	// without it, a RESP2 connection): the Client warns of it once, and a
	// removal is heard at the holder's next renewal, up to a third of the
	// watchdog lease later. See docs/safety.md.
	Tracking bool
}

// Stats returns the Client's counters. It costs no round trip.
func (c *Client) Stats() Stats {
	cc := c.core()
	if cc.Keeper() == nil {
		return Stats{} // a Client not made by Open or New
	}
	k, h := cc.Keeper(), cc.Hub().Stats()
	return Stats{Leases: k.Len(), RenewalRounds: k.Rounds(), Subscriptions: h.Subscriptions,
		Waiters: h.Waiters, Wakeups: h.Wakeups, MemoryPolicy: cc.Options().MemoryPolicy, Tracking: k.Tracked()}
}
