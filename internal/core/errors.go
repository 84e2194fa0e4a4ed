package core

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/lease"
)

// Errorf returns the *lease.Error of operation op on the lock name.
func Errorf(op, name, format string, args ...any) error {
	return &lease.Error{Op: op, Name: name, Err: fmt.Errorf(format, args...)}
}

// CtxErr is the error of operation op on the lock name whose ctx ended: it
// wraps ctx.Err(), and the last attempt's error if there was one (errors.Is finds
// either: a RedLock that ran out of time says it was not acquired).
func CtxErr(ctx context.Context, op, name string, last error) error {
	if last != nil && !errors.Is(last, ctx.Err()) {
		return Errorf(op, name, "%w (last attempt: %w)", ctx.Err(), last)
	}
	return Errorf(op, name, "%w", ctx.Err())
}

// RedisErr is the error of operation op on the lock name that Redis refused
// with an error reply: it wraps lease.ErrRedis and the reply. An error that
// is a *lease.Error already is returned as it is.
func RedisErr(op, name string, err error) error {
	var le *lease.Error
	if errors.As(err, &le) {
		return err
	}
	if re, ok := rueidis.IsRedisErr(err); ok {
		return Errorf(op, name, "%w: %w", lease.ErrRedis, reply{re})
	}
	return Errorf(op, name, "%w", err)
}

// reply is a Redis error reply as a lock's error reads it: without the
// script's SHA and line, which Redis adds to the reply of a command a script
// ran and which tell the caller nothing, and WRONGTYPE in a lock's words.
// It unwraps to the reply.
type reply struct{ err *rueidis.RedisError }

// Where a script's command failed, as Redis 7 and Valkey put it after the
// reply (" script: SHA, on @user_script:LINE.") and Redis 6 before it
// ("Error running script (call to f_SHA): @user_script:LINE: ").
var (
	scriptPlace = regexp.MustCompile(` script: [0-9a-f]{40}, on @user_script:\d+\.$`)
	scriptHead  = regexp.MustCompile(`^(ERR )?Error running script \(call to f_[0-9a-f]{40}\): (@user_script: ?\d+: )+-?`)
)

func (r reply) Error() string {
	msg := scriptHead.ReplaceAllString(scriptPlace.ReplaceAllString(r.err.Error(), ""), "")
	if code, _, _ := strings.Cut(msg, " "); code == "WRONGTYPE" {
		return "WRONGTYPE: a key of this name holds another type of value (another kind of lock, or other data)"
	}
	return msg
}

func (r reply) Unwrap() error { return r.err }
