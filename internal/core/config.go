package core

import (
	"fmt"
	"time"

	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/lease"
)

// LockConfig is the configuration of one lock: its Client's settings and
// its own options.
type LockConfig struct {
	Options
	// LeaseTime is the fixed lease; zero means the watchdog renews.
	LeaseTime time.Duration
	// QueueTimeout is a fair-lock waiter's time in the queue between refreshes.
	QueueTimeout time.Duration
	// WriterPreference makes a read-write lock hold back readers while a
	// writer waits.
	WriterPreference bool
	// HoldAtLeast is how long after its acquisition a released lock stays
	// taken, by no holder; zero for none.
	HoldAtLeast time.Duration
	// Err is the first invalid option, returned by the lock's first Acquire.
	Err error
}

// TTL is the lease Redis is given on each acquisition: the fixed lease time,
// or the watchdog's. It is the one source of the lease time: the scripts'
// arguments, the local deadline and the renewal all read it.
func (c LockConfig) TTL() time.Duration {
	if c.LeaseTime > 0 {
		return c.LeaseTime
	}
	return c.Watchdog
}

// Lua is what the lock's scripts take of its configuration.
func (c LockConfig) Lua() lua.Config {
	return lua.Config{Lease: c.TTL(), QueueTimeout: c.QueueTimeout, PreferWriters: c.WriterPreference}
}

// Renewed reports whether the watchdog renews the lock's leases.
func (c LockConfig) Renewed() bool { return c.LeaseTime == 0 }

// Takes is the set of options a lock kind takes beyond those every kind
// takes (WithLeaseTime): an option of another kind given to it fails its
// first call with lease.ErrInvalid naming the option, rather than being
// ignored.
type Takes uint8

// The options only some kinds take.
const (
	TakesQueueTimeout     Takes = 1 << iota // fairqueue: WithQueueTimeout
	TakesWriterPreference                   // rw: WithWriterPreference
	TakesHoldAtLeast                        // rlock, fairqueue: WithHoldAtLeast
)

// A LockOption configures one lock; every lock constructor takes them. It
// is sealed: only NewLockOption makes one.
type LockOption interface{ applyLock(*LockConfig, Takes) }

type lockOption struct {
	name  string // the option's name in errors, "leasehold.WithQueueTimeout"
	only  Takes  // the kinds that take it; 0 for every kind
	apply func(*LockConfig)
}

func (o lockOption) applyLock(c *LockConfig, takes Takes) {
	if o.only != 0 && takes&o.only == 0 {
		if c.Err == nil {
			c.Err = fmt.Errorf("%w: %s is not an option of this kind of lock", lease.ErrInvalid, o.name)
		}
		return
	}
	o.apply(c)
}

// NewLockOption returns the option name that applies f; only, when not 0,
// is the set of kinds that take it.
func NewLockOption(name string, only Takes, f func(*LockConfig)) LockOption {
	return lockOption{name: name, only: only, apply: f}
}

// DefaultQueueTimeout is how long a fair-lock waiter keeps its place in the
// queue without refreshing it, when WithQueueTimeout is not given
// (Redisson's threadWaitTime).
const DefaultQueueTimeout = 5 * time.Second
