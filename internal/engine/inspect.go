package engine

import (
	"context"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/core"
	"github.com/leasehold/leasehold/internal/lua"
)

// Redis is the Client's rueidis client for operation op, or the error Check
// reports.
func (e *Engine) Redis(op string) (rueidis.Client, error) {
	if err := e.Check(op); err != nil {
		return nil, err
	}
	return e.client.Redis(), nil
}

// Fail returns err, a Redis reply or transport error of operation op, as the
// lock's *lease.Error; nil stays nil.
func (e *Engine) Fail(op string, err error) error {
	if err == nil {
		return nil
	}
	return core.RedisErr(op, e.name, err)
}

// ForceRelease runs f's force release, for operators: it deletes the lock
// whoever holds it, and reports whether there was a lock.
func (e *Engine) ForceRelease(ctx context.Context, f lua.ForceReleaser) (bool, error) {
	const op = "force-release"
	rc, err := e.Redis(op)
	if err != nil {
		return false, err
	}
	ok, err := f.ForceRelease(ctx, rc)
	return ok, e.Fail(op, err)
}

// IsLocked reports whether the lock hash holds any field: one round trip.
// It does not read through the client-side cache: Redis would keep tracking
// the name of a free lock until it is next written, which a name used once
// never is (see guard, in internal/core).
func (e *Engine) IsLocked(ctx context.Context) (bool, error) {
	rc, err := e.Redis("inspect")
	if err != nil {
		return false, err
	}
	n, err := rc.Do(ctx, rc.B().Hlen().Key(e.key).Build()).AsInt64()
	return n > 0, e.Fail("inspect", err)
}

// HoldCount is the number of unreleased leases on the hold that ctx carries
// for this lock; 0 when it carries none. It costs no round trip.
func (e *Engine) HoldCount(ctx context.Context) (int, error) {
	if err := e.Check("inspect"); err != nil {
		return 0, err
	}
	return core.HoldFrom(ctx, e.scope, e.name).Leases(), nil
}

// RemainTTL is the lock key's remaining time to live: 0 when the lock is
// free, -1ns when it is held with no expiry.
func (e *Engine) RemainTTL(ctx context.Context) (time.Duration, error) {
	rc, err := e.Redis("inspect")
	if err != nil {
		return 0, err
	}
	ms, err := rc.Do(ctx, rc.B().Pttl().Key(e.key).Build()).AsInt64()
	switch {
	case err != nil:
		return 0, e.Fail("inspect", err)
	case ms == -2:
		return 0, nil
	case ms < 0:
		return -1, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}
