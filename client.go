package leasehold

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/event"
	"github.com/leasehold/leasehold/lease"
)

// closeTimeout bounds how long Close spends releasing the locks still held.
const closeTimeout = 5 * time.Second

// Client is a connection to Redis shared by every lock made from it: one
// rueidis client, a unique ID (the owner prefix in Redis), the event hub that
// wakes waiters and the keeper that renews leases. It is safe for concurrent
// use; make one per process and Close it on the way out.
type Client struct {
	rc     rueidis.Client
	owned  bool // Open created rc, so Close closes it
	id     string
	opts   options
	hub    *event.Hub
	keeper *lease.Keeper
	seq    atomic.Uint64
	ctx    context.Context // cancelled when Close begins
	cancel context.CancelFunc

	mu     sync.Mutex // orders Go against Close
	closed bool
	wg     sync.WaitGroup
	once   sync.Once
}

// Open dials Redis with rueidis' own options (addresses, auth, TLS, sentinel,
// cluster) and wraps the new client. It chains its hook onto
// opt.OnInvalidations, so invalidations of lock keys (on release and on
// expiry) wake waiters over the same connection. Unless opt sets
// PipelineMultiplex, Open uses one connection per Redis node rather than
// rueidis' default of one per pair of cores. Close closes the rueidis client.
func Open(opt rueidis.ClientOption, opts ...Option) (*Client, error) {
	o, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	// rueidis takes the hook at creation, before the hub exists: route
	// through a pointer set once the hub is made. Nothing is tracked before.
	var hub atomic.Pointer[event.Hub]
	user := opt.OnInvalidations
	opt.OnInvalidations = func(keys []rueidis.RedisMessage) {
		if h := hub.Load(); h != nil {
			h.Invalidate(keys)
		}
		if user != nil {
			user(keys)
		}
	}
	if opt.PipelineMultiplex == 0 {
		opt.PipelineMultiplex = -1 // rueidis reads a negative value as 2^0 = 1 connection
	}
	rc, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("leasehold: open: %w", err)
	}
	if err := o.check(rc); err != nil {
		rc.Close()
		return nil, err
	}
	c := newClient(rc, true, !opt.DisableCache, o)
	hub.Store(c.hub)
	return c, nil
}

// New wraps a rueidis client the caller already has; Close leaves it open.
// rueidis takes the invalidation hook only at creation, so with New the
// expiry of a lock is noticed by waiters' TTL timers rather than by
// invalidations; releases still wake them through unlock messages.
func New(client rueidis.Client, opts ...Option) (*Client, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil rueidis client", lease.ErrInvalid)
	}
	o, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	if err := o.check(client); err != nil {
		return nil, err
	}
	return newClient(client, false, false, o), nil
}

func newClient(rc rueidis.Client, owned, tracking bool, o options) *Client {
	ctx, cancel := context.WithCancel(context.Background())
	return &Client{
		rc:     rc,
		owned:  owned,
		id:     newUUID(),
		opts:   o,
		hub:    event.NewHub(rc, tracking),
		keeper: lease.NewKeeper(rc, o.watchdog, lease.WaitReplicas(o.replicas, o.replicaTimeout)),
		ctx:    ctx,
		cancel: cancel,
	}
}

// ID is the Client's unique id, a random UUID: the CLIENT_ID in the owner
// field CLIENT_ID:LEASE_ID that its locks write in Redis.
func (c *Client) ID() string { return c.id }

// Close reports every lease the Client still holds lost with lease.ErrClosed,
// releases those locks (best effort, for at most 5s), and returns once every
// goroutine the Client started has ended. Waiters return lease.ErrClosed, as
// do later calls on its locks. A Client made by Open closes its rueidis
// client too. Close always returns nil; calling it again does nothing.
func (c *Client) Close() error {
	c.once.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		c.cancel()
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		c.keeper.Close(ctx)
		cancel()
		c.wg.Wait()
		c.hub.Close()
		if c.owned {
			c.rc.Close()
		}
	})
	return nil
}

// Err returns an error wrapping lease.ErrClosed once Close has begun, nil before.
func (c *Client) Err() error {
	if c.ctx.Err() != nil {
		return fmt.Errorf("%w: client %s", lease.ErrClosed, c.id)
	}
	return nil
}

// The methods below are for lock implementations (rlock, fairqueue, rw and
// locks of your own); applications need none of them.

// Context is cancelled when Close begins.
func (c *Client) Context() context.Context { return c.ctx }

// Redis is the rueidis client the Client runs on.
func (c *Client) Redis() rueidis.Client { return c.rc }

// Hub is the Client's event hub.
func (c *Client) Hub() *event.Hub { return c.hub }

// Keeper is the Client's lease keeper.
func (c *Client) Keeper() *lease.Keeper { return c.keeper }

// NewOwner returns a fresh owner field, CLIENT_ID:LEASE_ID, for one acquisition.
func (c *Client) NewOwner() string {
	var b [64]byte
	return string(strconv.AppendUint(append(append(b[:0], c.id...), ':'), c.seq.Add(1), 10))
}

// LockConfig resolves a lock's options against the Client's settings.
func (c *Client) LockConfig(opts ...LockOption) LockConfig {
	cfg := LockConfig{Watchdog: c.opts.watchdog, QueueTimeout: DefaultQueueTimeout, Observer: c.opts.observer,
		Replicas: c.opts.replicas, ReplicaTimeout: c.opts.replicaTimeout}
	for _, o := range opts {
		if o != nil {
			o.applyLock(&cfg)
		}
	}
	return cfg
}

// Go runs f in a goroutine that Close waits for. It returns false, without
// running f, once Close has begun.
func (c *Client) Go(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
	return true
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
