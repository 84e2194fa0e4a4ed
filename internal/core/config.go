package core

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/access"
	"github.com/leasehold/leasehold/internal/lua"
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

// Lua is what the lock's scripts take of its configuration.
func (c LockConfig) Lua() lua.Config {
	return lua.Config{Lease: c.TTL(), QueueTimeout: c.QueueTimeout, PreferWriters: c.WriterPreference}
}

// Renewed reports whether the watchdog renews the lock's leases.
func (c LockConfig) Renewed() bool { return c.LeaseTime == 0 }

// Bind resolves what a lock constructor was given, a *leasehold.Client and
// its LockOptions (as any: this package cannot name the root package's
// types), into the Client's core (nil for a nil *leasehold.Client) and the
// lock's configuration. The root package sets it when it is initialised;
// every lock package imports the root package, so it is set before use.
var Bind func(client any, opts any) (*Client, LockConfig)

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
// caller runs it exactly once, in a goroutine it waits for.
func NewFuture(ctx context.Context, acquire func(context.Context) (*lease.Lease, error)) (*lease.Future, func()) {
	f, run := access.NewFuture(ctx, func(ctx context.Context) (any, error) {
		l, err := acquire(ctx)
		if l == nil {
			return nil, err // not a typed nil in an interface
		}
		return l, err
	})
	return f.(*lease.Future), run
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
