// Package core is the part of a leasehold Client that the lock packages run
// on: the rueidis client, the owner ids, the event hub, the keeper that renews
// leases and the holds it keeps, and the goroutines Close waits for. The root
// package's Client wraps one; nothing below the lock kinds imports the root
// package.
package core

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/handoff"
	"github.com/leasehold/leasehold/internal/hub"
	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/lease"
)

// closeTimeout bounds Close: releasing the locks still held, waiting for the
// goroutines it started, dropping the subscriptions, closing the
// connections. The last part, closeReserve, is kept for closing the rueidis
// client: it waits up to a second for a silent server's reply to the PING it
// sends on a connection it closes.
const (
	closeTimeout = 5 * time.Second
	closeReserve = 1250 * time.Millisecond
)

// Options are a Client's settings, resolved from the root package's
// options; every lock of the Client reads them (LockConfig).
type Options struct {
	// Sharded: rc is a Redis Cluster of Redis 7+ whose unlock messages go
	// by sharded pub/sub (SPUBLISH, SSUBSCRIBE).
	Sharded bool
	// Watchdog is the lease of locks taken without a fixed lease time.
	Watchdog time.Duration
	// Observer is the Client's observer, nil for none.
	Observer lease.Observer
	// Replicas is how many replicas must acknowledge each acquisition and
	// renewal (WithReplicas), within ReplicaTimeout; 0 for none.
	Replicas       int
	ReplicaTimeout time.Duration
	// ID is the Client's id, given when its connections are named after it
	// before the Client exists (leasehold.Open); empty: NewClient draws one.
	ID string
	// MemoryPolicy is the server's maxmemory-policy, read at Open or New.
	MemoryPolicy string
	// KeyPrefix is put before every lock name in Redis (see Key).
	KeyPrefix string
}

// Client is the shared state of one leasehold Client.
type Client struct {
	rc     rueidis.Client
	owned  bool // the root package created rc, so Close closes it
	id     string
	opts   Options
	hub    *hub.Hub
	lines  *handoff.Lines
	keeper *Keeper
	seq    atomic.Uint64
	ctx    context.Context // cancelled when Close begins
	cancel context.CancelFunc
	// closing is cancelled when Close's time is up: what Close waits for
	// (a release in the background) ends by then.
	closing context.Context
	drain   context.CancelFunc

	mu     sync.Mutex // orders Go against Close
	closed bool
	wg     sync.WaitGroup
	once   sync.Once
}

// NewClient returns a Client on rc. owned says whether Close closes rc.
// Its holders hear of a removal from Redis, and its waiters of a release or
// an expiry, on connections of their own wherever the server offers CLIENT
// TRACKING (see Keeper.Tracked), never through rc's cache, so that rc keeps
// rueidis' direct mode; where the server does not, the Client warns of it.
func NewClient(rc rueidis.Client, owned bool, o Options) *Client {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{}
	c.closing, c.drain = context.WithCancel(context.Background())
	hubOpts := []hub.HubOption{hub.Warnings(func(err error) { c.Warn(err) })}
	if o.Sharded {
		// Every script run on it publishes with SPUBLISH.
		rc = lua.Sharded{Client: rc}
		hubOpts = append(hubOpts, hub.Sharded())
	}
	if o.ID == "" {
		o.ID = NewID()
	}
	c.rc, c.owned, c.id, c.opts = rc, owned, o.ID, o
	// A waiter's key is read on the keeper's tracking connection: Watch and
	// Unwatch are called only by waiters, once NewClient has returned.
	hubOpts = append(hubOpts, hub.Tracker(func(key string) { c.keeper.Watch(key) }, func(key string) { c.keeper.Unwatch(key) }))
	c.hub = hub.NewHub(rc, hubOpts...)
	c.lines = handoff.New(c.hub)
	c.keeper = NewKeeper(rc, o.Watchdog, o.Sharded, c.Warn, WaitReplicas(o.Replicas, o.ReplicaTimeout), Hints(c.hub.InvalidateKeys))
	c.ctx, c.cancel = ctx, cancel
	return c
}

// Warn reports err, a lease.Warning, to the Client's Observer, or to
// slog.Default at Warn without one.
func (c *Client) Warn(err error) {
	o := c.opts.Observer
	if o == nil {
		o = lease.SlogObserver(nil)
	}
	o.Observe(lease.Event{Kind: lease.Warning, Err: err})
}

// ID is the Client's unique id, a random UUID.
func (c *Client) ID() string { return c.id }

// Close reports every lease still held lost with lease.ErrClosed, releases
// those locks (best effort), drops the subscriptions and returns once every
// goroutine started through Go has ended, all within closeTimeout (or the
// rueidis client's dial timeout, if longer, when a connection is being
// made: rueidis dials without a ctx). It may be called more than once.
func (c *Client) Close() {
	if c.keeper == nil {
		return // a zero Client: nothing was started
	}
	c.once.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		c.cancel()
		stop := time.AfterFunc(closeTimeout-closeReserve, c.drain)
		defer stop.Stop()
		defer c.drain()
		c.keeper.Close(c.closing)
		c.wg.Wait()
		if !c.owned {
			c.hub.Close(c.closing) // the connections stay: unsubscribe
			return
		}
		// Closing the connections drops their subscriptions: the hub's
		// unsubscriptions and rueidis' close, each of which may wait a second
		// for a silent server, run side by side and share that second.
		hubClosed := make(chan struct{})
		go func() {
			defer close(hubClosed)
			c.hub.Close(c.closing)
		}()
		c.rc.Close()
		<-hubClosed
	})
}

// Err returns an error wrapping lease.ErrClosed once Close has begun, nil
// before; one wrapping lease.ErrInvalid for a zero Client.
func (c *Client) Err() error {
	if c.ctx == nil { // a zero Client
		return fmt.Errorf("%w: a Client not made by leasehold.Open or New", lease.ErrInvalid)
	}
	if c.ctx.Err() != nil {
		return fmt.Errorf("%w: client %s", lease.ErrClosed, c.id)
	}
	return nil
}

// Context is cancelled when Close begins.
func (c *Client) Context() context.Context { return c.ctx }

// Closing is cancelled when Close's time is up: work that Close waits for
// (a release in the background) must end by then.
func (c *Client) Closing() context.Context { return c.closing }

// Redis is the rueidis client.
func (c *Client) Redis() rueidis.Client { return c.rc }

// Hub is the event hub.
func (c *Client) Hub() *hub.Hub { return c.hub }

// Lines are the lines of the Client's waiters that a release may pass a
// lock to.
func (c *Client) Lines() *handoff.Lines { return c.lines }

// Keeper is the lease keeper.
func (c *Client) Keeper() *Keeper { return c.keeper }

// Options are the Client's settings.
func (c *Client) Options() Options { return c.opts }

// LockConfig resolves the options of a lock of a kind that takes the
// options in takes against the Client's settings. c may be nil (a nil
// *leasehold.Client): the lock then fails at its first call.
func (c *Client) LockConfig(opts []LockOption, takes Takes) LockConfig {
	cfg := LockConfig{QueueTimeout: DefaultQueueTimeout}
	if c != nil {
		cfg.Options = c.opts
	}
	for _, opt := range opts {
		if opt != nil {
			opt.applyLock(&cfg, takes)
		}
	}
	return cfg
}

// NewOwner returns a fresh owner field, CLIENT_ID:LEASE_ID, for one acquisition.
func (c *Client) NewOwner() string {
	var b [64]byte
	return string(strconv.AppendUint(append(append(b[:0], c.id...), ':'), c.seq.Add(1), 10))
}

// Go runs f in a goroutine that Close waits for. It returns false, without
// running f, once Close has begun.
func (c *Client) Go(f func()) bool {
	done, ok := c.Join()
	if !ok {
		return false
	}
	go func() {
		defer done()
		f()
	}()
	return true
}

// NewID returns a new Client id, a random (version 4) UUID.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// Join counts a goroutine that Close must wait for, started elsewhere (by a
// lock made of other locks, which runs on several Clients). It returns false
// once Close has begun; otherwise the caller calls done when the goroutine
// ends.
func (c *Client) Join() (done func(), ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, false
	}
	c.wg.Add(1)
	return c.wg.Done, true
}
