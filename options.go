package leasehold

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold/leasehold/internal/core"
	"github.com/leasehold/leasehold/lease"
)

// defaultWatchdog is the lease a watchdog keeps renewing when WithWatchdog
// is not given, as Redisson's lockWatchdogTimeout.
const defaultWatchdog = 30 * time.Second

// An Option configures a Client in Open or New.
type Option interface{ apply(*options) }

type options struct {
	core.Options        // what the Client's locks read
	classic      bool   // classic pub/sub in Redis Cluster too
	name         string // WithClientName's, or defaultName
	err          error
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// minLease is the shortest lease WithWatchdog and WithLeaseTime accept. A
// holder's local deadline comes lease/50 + 2ms before the lease runs out in
// Redis, counted from when the acquisition was sent: a lease of a few
// milliseconds would be lost before its acquisition returned.
const minLease = 10 * time.Millisecond

// WithWatchdog sets the lease of locks taken without WithLeaseTime: the
// watchdog renews it every d/3 while the holder holds the lock, and it runs
// out d after the holder's process dies. d must be at least 10ms.
// Default: 30s.
func WithWatchdog(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d < minLease {
			// Below it the keeper's tick, d/3, would be 0 or a busy loop.
			o.err = fmt.Errorf("%w: watchdog %v is shorter than %v", lease.ErrInvalid, d, minLease)
			return
		}
		o.Watchdog = d
	})
}

// WithObserver has o hear of the life of every lease of the Client: each
// acquisition (and how long it waited), renewal, release and loss, with the
// lock name and durations, and of the Client's warnings (lease.Warning).
// o.Observe runs on the goroutines doing the work, so it must be quick and
// must not block. Default: none, and warnings go to slog.Default at Warn.
func WithObserver(o lease.Observer) Option {
	return optionFunc(func(opts *options) { opts.Observer = o })
}

// WithReplicas makes every acquisition and every watchdog renewal wait until
// n replicas of the Redis primary have acknowledged it (Redis WAIT n, for at
// most timeout), so that a replica promoted after the primary dies still
// holds the lock: without it a lock taken just before a failover is lost
// with the primary, and two owners hold it. An acquisition fewer replicas
// acknowledge is released and fails with an error wrapping lease.ErrNotReplicated
// and lease.ErrNotAcquired (Redisson's checkLockSyncedSlaves); a renewal
// round fewer acknowledge confirms no lease, so their local deadlines do not
// move, and the round is retried until they run out. Each acquisition then
// costs one more round trip, of up to timeout, on a connection of its own;
// keep timeout well under the lease, which runs from when the acquisition
// was sent.
// In Redis Cluster, WAIT runs on a dedicated connection to the node of the
// lock's slot, and a renewal round costs one round trip per slot held (in
// parallel). Default: 0, no waiting.
func WithReplicas(n int, timeout time.Duration) Option {
	return optionFunc(func(o *options) {
		switch {
		case n < 0:
			o.err = fmt.Errorf("%w: %d replicas is negative", lease.ErrInvalid, n)
		case n > 0 && timeout <= 0:
			// WAIT with timeout 0 blocks for ever.
			o.err = fmt.Errorf("%w: replica timeout %v is not positive", lease.ErrInvalid, timeout)
		default:
			o.Replicas, o.ReplicaTimeout = n, timeout
		}
	})
}

func resolve(opts []Option) (options, error) {
	o := options{Options: core.Options{Watchdog: defaultWatchdog}, name: defaultName()}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	return o, o.err
}

// WithClassicPubSub keeps classic pub/sub (PUBLISH, SUBSCRIBE) for unlock
// messages in Redis Cluster, for a cluster shared with Redisson versions or
// settings that subscribe the classic way (shardedSubscriptionMode OFF, or
// Redisson before 3.23). A classic message is broadcast to every node of the
// cluster. Elsewhere it changes nothing. Default: in Redis Cluster on Redis
// 7 and later, sharded pub/sub (SPUBLISH, SSUBSCRIBE), as Redisson's default
// (shardedSubscriptionMode AUTO) there.
func WithClassicPubSub() Option {
	return optionFunc(func(o *options) { o.classic = true })
}

// WithClientName names the Client's connections to Redis NAME/ID, ID being
// the Client's ID (the start of every owner field its locks write), so that
// CLIENT LIST shows which process holds what: `leasehold inspect` shows each
// holder's connection name and address from it. Open sets the name (CLIENT
// SETNAME, on every connection it makes) unless opt.ClientName is set, which
// it leaves as it is; New leaves the caller's client as it is. name must be
// printable ASCII without spaces, as Redis requires. Default: HOST:PID.
func WithClientName(name string) Option {
	return optionFunc(func(o *options) {
		if name == "" || strings.IndexFunc(name, badNameRune) >= 0 {
			o.err = fmt.Errorf("%w: client name %q: Redis takes printable ASCII without spaces", lease.ErrInvalid, name)
			return
		}
		o.name = name
	})
}

// badNameRune reports whether Redis refuses r in a connection name.
func badNameRune(r rune) bool { return r < '!' || r > '~' }

// defaultName is HOST:PID, with what Redis refuses in a name replaced by _.
func defaultName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	host = strings.Map(func(r rune) rune {
		if badNameRune(r) {
			return '_'
		}
		return r
	}, host)
	return host + ":" + strconv.Itoa(os.Getpid())
}

// A LockOption configures one lock; every lock constructor takes them. An
// option of one kind given to a lock of another (WithQueueTimeout to an
// rlock) fails the lock's first call with an error wrapping
// lease.ErrInvalid that names the option.
type LockOption struct {
	// o is the option, and LockOption's only field: the lock kinds read
	// a []LockOption as the options' (internal/clientcore).
	o core.LockOption
}

// WithLeaseTime sets a fixed lease with no watchdog: the lock expires d after
// it was taken unless released first (Redisson's lock(leaseTime)), and the
// Lease's Lost closes just before. d must be at least 10ms. Every kind takes
// it. Default: watchdog, 30s (WithWatchdog).
func WithLeaseTime(d time.Duration) LockOption {
	return LockOption{core.NewLockOption("leasehold.WithLeaseTime", 0, func(c *core.LockConfig) {
		if d < minLease {
			c.Err = fmt.Errorf("%w: lease time %v is shorter than %v", lease.ErrInvalid, d, minLease)
			return
		}
		c.LeaseTime = d
	})}
}

// WithHoldAtLeast keeps a lock taken, by no holder, until d after its
// acquisition when its lease is released sooner (ShedLock's lockAtLeastFor),
// so that replicas running a job on schedules less than d apart run it once:
// choose d above that splay and below the interval less it (docs/cron.md).
// Then the lock is free and its waiters wake as after a release; a lease
// released later frees it at once. d is counted on the acquiring process's
// monotonic clock from the acquisition's reply, which no clock skew between
// replicas shortens. d must be positive. Only rlock and fairqueue take it:
// rw's readers share and its writer would stall them, a semaphore's
// permits count holders, not runs, and an election's terms are not runs.
// Default: none.
func WithHoldAtLeast(d time.Duration) LockOption {
	return LockOption{core.NewLockOption("leasehold.WithHoldAtLeast", core.TakesHoldAtLeast, func(c *core.LockConfig) {
		if d <= 0 {
			c.Err = fmt.Errorf("%w: hold-at-least %v is not positive", lease.ErrInvalid, d)
			return
		}
		c.HoldAtLeast = d
	})}
}

// WithQueueTimeout sets how long a waiter of a fair lock (fairqueue) keeps its
// place in the queue without refreshing it: a waiter that vanishes (its
// process died) is skipped once this has passed. Live waiters refresh their
// place well within it. Only fairqueue takes it. Default: 5s (Redisson's
// threadWaitTime).
func WithQueueTimeout(d time.Duration) LockOption {
	return LockOption{core.NewLockOption("leasehold.WithQueueTimeout", core.TakesQueueTimeout, func(c *core.LockConfig) {
		if d <= 0 {
			c.Err = fmt.Errorf("%w: queue timeout %v is not positive", lease.ErrInvalid, d)
			return
		}
		c.QueueTimeout = d
	})}
}

// WithWriterPreference makes a read-write lock (rw) hold back new readers
// while a writer waits, so a stream of readers cannot starve writers. Only
// rw takes it. Default: no preference, as Redisson.
func WithWriterPreference() LockOption {
	return LockOption{core.NewLockOption("leasehold.WithWriterPreference", core.TakesWriterPreference,
		func(c *core.LockConfig) { c.WriterPreference = true })}
}
