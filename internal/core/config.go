package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/access"
	"github.com/leasehold/leasehold/lease"
)

// LockConfig is the configuration of one lock, resolved from its options and
// its Client.
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
	// Replicas is how many replicas must acknowledge each acquisition
	// (WithReplicas), within ReplicaTimeout; 0 for none.
	Replicas       int
	ReplicaTimeout time.Duration
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

// Class is what a failed call's error says about Redis, and so what the
// caller does next. Every kind, its renewals and its releases decide by
// Classify, so that one reply never means two things in two places.
type Class int

const (
	// Final: Redis refused the command for good (WRONGTYPE, a script's
	// error, NOPERM, an unknown command), or the input, the Client or the
	// replicas failed it. The command wrote nothing; fail at once.
	Final Class = iota
	// Pause: Redis answered that it cannot serve the command now and will
	// soon (see paused). The command did not run; retry with backoff
	// until the caller's ctx ends.
	Pause
	// Unknown: no reply (a cut connection, a timeout, a ctx that ended):
	// the command may or may not have run. Undo what it may have done,
	// then retry as after a pause.
	Unknown
)

// Classify says which Class err is of; nil is Final.
func Classify(err error) Class {
	if err == nil {
		return Final
	}
	if e, ok := rueidis.IsRedisErr(err); ok {
		if paused(replyCode(e.Error())) {
			return Pause
		}
		return Final
	}
	if errors.Is(err, lease.ErrInvalid) || errors.Is(err, lease.ErrClosed) ||
		errors.Is(err, lease.ErrNotReplicated) || errors.Is(err, lease.ErrRedis) {
		return Final
	}
	return Unknown
}

// Transient reports whether err may pass: a Pause or an Unknown.
func Transient(err error) bool { return Classify(err) != Final }

// replyCode is the error code of a Redis error reply: its first word, or,
// for Redis 6's wrapping of an error raised inside a script ("ERR Error
// running script ...: -READONLY You can't write ..."), the code of the
// error the script met.
func replyCode(msg string) string {
	if rest, ok := strings.CutPrefix(strings.TrimPrefix(msg, "ERR "), "Error running script"); ok {
		if i := strings.Index(rest, ": -"); i >= 0 {
			msg = rest[i+3:]
		}
	}
	code, _, _ := strings.Cut(msg, " ")
	return code
}

// NewFuture returns a Future for acquire and the function that runs it; the
// caller runs it exactly once, in a goroutine it waits for. A lease won
// after Cancel, or never taken by Result, is released within ReleaseTimeout.
func NewFuture(ctx context.Context, acquire func(context.Context) (*lease.Lease, error)) (*lease.Future, func()) {
	f, run := access.NewFuture(ctx, acquire, func(l *lease.Lease) {
		ctx, cancel := context.WithTimeout(context.Background(), ReleaseTimeout)
		defer cancel()
		_ = l.Release(ctx) // best effort: a failed release lets the lease run out
	})
	return (*lease.Future)(f), run
}

// paused reports whether a Redis error code says the server cannot run the
// command now and will soon: a slot being migrated whose keys are split
// across nodes, or one of Redisson's keys (a channel, a latch: never
// written) not yet moved (TRYAGAIN); a cluster between a primary's failure
// and its replica's promotion (CLUSTERDOWN); a server loading its data
// (LOADING); a replica that lost its primary (MASTERDOWN); a former primary,
// now a replica, reached before the client learnt of the failover
// (READONLY; a Client opened on a replica fails at Open instead); a script
// of someone else's running past busy-reply-threshold (BUSY); memory full
// under noeviction, which frees as keys expire or are deleted (OOM: Redis
// refuses a script's first write, so nothing was written); too few replicas
// for min-replicas-to-write (NOREPLICAS); a failed background save that
// stops writes until the next one succeeds (MISCONF). The command did not
// run.
func paused(code string) bool {
	switch code {
	case "TRYAGAIN", "CLUSTERDOWN", "LOADING", "MASTERDOWN", "READONLY", "BUSY", "OOM", "NOREPLICAS", "MISCONF":
		return true
	}
	return false
}
