// Package retry is leasehold's one policy for what Redis answers: which
// replies are a pause to wait out, which are final, which leave the outcome
// unknown (Classify), and how long to wait before the next try (Backoff).
// Every lock kind, its renewals and releases, quorum and the hub decide by
// it, so that one reply never means two things in two places.
package retry

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/lease"
)

// Class is what a failed call's error says about Redis, and so what the
// caller does next.
type Class int

const (
	// Final: Redis refused the command for good (WRONGTYPE, a script's
	// error, NOPERM, an unknown command), or the input, the Client or the
	// replicas failed it, or the owner no longer holds the lock. The command
	// wrote nothing; fail at once.
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
	if errors.Is(err, lease.ErrInvalid) || errors.Is(err, lease.ErrClosed) || errors.Is(err, lease.ErrNotHeld) ||
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

// IsBusy reports whether err is Redis' BUSY: a script of someone else's
// running past busy-reply-threshold, during which Redis answers every
// command but a few with it.
func IsBusy(err error) bool { return HasCode(err, "BUSY") }

// HasCode reports whether err is a Redis error reply of the given code
// (WRONGTYPE, BUSY, ...), read as Classify reads it.
func HasCode(err error, code string) bool {
	e, ok := rueidis.IsRedisErr(err)
	return ok && replyCode(e.Error()) == code
}

// Backoff is the one backoff policy: exponential from first, doubling with
// jitter, at most max between tries, never giving up by itself (the caller's
// ctx or deadline bounds it).
func Backoff(first, max time.Duration) *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = first
	b.MaxInterval = max
	b.MaxElapsedTime = 0
	b.Reset() // the first interval was set from the defaults
	return b
}

// Do runs op until it returns nil or an error that is not Transient, or ctx
// ends, backing off from 20ms to 1s between tries, and returns op's last
// error (nil when it succeeded).
func Do(ctx context.Context, op func() error) error {
	return backoff.Retry(func() error {
		err := op()
		if err != nil && (!Transient(err) || ctx.Err() != nil) {
			return backoff.Permanent(err)
		}
		return err
	}, backoff.WithContext(Backoff(20*time.Millisecond, time.Second), ctx))
}
