package leasehold

import (
	"fmt"
	"time"

	"github.com/leasehold/leasehold/lease"
)

// DefaultWatchdog is the lease a watchdog keeps renewing when WithWatchdog is
// not given, as Redisson's lockWatchdogTimeout.
const DefaultWatchdog = 30 * time.Second

// An Option configures a Client in Open or New.
type Option interface{ apply(*options) }

type options struct {
	watchdog time.Duration
	observer lease.Observer
	err      error
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithWatchdog sets the lease of locks taken without WithLeaseTime: the
// watchdog renews it every d/3 while the holder holds the lock, and it runs
// out d after the holder's process dies. Default: 30s.
func WithWatchdog(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d <= 0 {
			o.err = fmt.Errorf("%w: watchdog %v is not positive", lease.ErrInvalid, d)
			return
		}
		o.watchdog = d
	})
}

// WithObserver has o hear of the life of every lease of the Client: each
// acquisition (and how long it waited), renewal, release and loss, with the
// lock name and durations. o.Observe runs on the goroutines doing the work,
// so it must be quick and must not block. Default: none.
func WithObserver(o lease.Observer) Option {
	return optionFunc(func(opts *options) { opts.observer = o })
}

func resolve(opts []Option) (options, error) {
	o := options{watchdog: DefaultWatchdog}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	return o, o.err
}

// A LockOption configures one lock; every lock constructor takes them.
type LockOption interface{ applyLock(*LockConfig) }

type lockOptionFunc func(*LockConfig)

func (f lockOptionFunc) applyLock(c *LockConfig) { f(c) }

// WithLeaseTime sets a fixed lease with no watchdog: the lock expires d after
// it was taken unless released first (Redisson's lock(leaseTime)), and the
// Lease's Lost closes just before. Default: watchdog, 30s (WithWatchdog).
func WithLeaseTime(d time.Duration) LockOption {
	return lockOptionFunc(func(c *LockConfig) {
		if d <= 0 {
			c.Err = fmt.Errorf("%w: lease time %v is not positive", lease.ErrInvalid, d)
			return
		}
		c.LeaseTime = d
	})
}

// DefaultQueueTimeout is how long a fair-lock waiter keeps its place in the
// queue without refreshing it, when WithQueueTimeout is not given (Redisson's
// threadWaitTime).
const DefaultQueueTimeout = 5 * time.Second

// WithQueueTimeout sets how long a waiter of a fair lock (fairqueue) keeps its
// place in the queue without refreshing it: a waiter that vanishes (its
// process died) is skipped once this has passed. Live waiters refresh their
// place well within it. Other locks ignore it. Default: 5s.
func WithQueueTimeout(d time.Duration) LockOption {
	return lockOptionFunc(func(c *LockConfig) {
		if d <= 0 {
			c.Err = fmt.Errorf("%w: queue timeout %v is not positive", lease.ErrInvalid, d)
			return
		}
		c.QueueTimeout = d
	})
}

// WithWriterPreference makes a read-write lock (rw) hold back new readers
// while a writer waits, so a stream of readers cannot starve writers. Other
// locks ignore it. Default: no preference, as Redisson.
func WithWriterPreference() LockOption {
	return lockOptionFunc(func(c *LockConfig) { c.WriterPreference = true })
}

// LockConfig is the configuration of one lock, resolved from its LockOptions
// and its Client. Lock implementations read it; Client.LockConfig makes one.
type LockConfig struct {
	// LeaseTime is the fixed lease; zero means the watchdog renews.
	LeaseTime time.Duration
	// Watchdog is the Client's watchdog lease.
	Watchdog time.Duration
	// QueueTimeout is a fair-lock waiter's time in the queue between refreshes.
	QueueTimeout time.Duration
	// WriterPreference makes a read-write lock hold back readers while a
	// writer waits.
	WriterPreference bool
	// Observer is the Client's observer, nil for none.
	Observer lease.Observer
	// Err is the first invalid option, returned by the lock's first Acquire.
	Err error
}

// TTL is the lease Redis is given on each acquisition: the fixed lease time,
// or the watchdog's.
func (c LockConfig) TTL() time.Duration {
	if c.LeaseTime > 0 {
		return c.LeaseTime
	}
	return c.Watchdog
}

// Renewed reports whether the watchdog renews the lock's leases.
func (c LockConfig) Renewed() bool { return c.LeaseTime == 0 }
