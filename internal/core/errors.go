package core

import (
	"context"
	"errors"
	"fmt"

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
	if _, ok := rueidis.IsRedisErr(err); ok {
		return Errorf(op, name, "%w: %w", lease.ErrRedis, err)
	}
	return Errorf(op, name, "%w", err)
}
