package engine

import (
	"context"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/lease"
)

// Redis is the Client's rueidis client, or the error Check reports.
func (l *Lock) Redis() (rueidis.Client, error) {
	if err := l.Check(); err != nil {
		return nil, err
	}
	return l.Client.Redis(), nil
}

// IsLocked reports whether the lock hash holds any field, reading through the
// client-side cache: no round trip while the cached answer stands. For a
// moment after this Client's own write to the lock it may report the state
// from before: Redis sends a client the invalidation of its own write just
// after the write's reply.
func (l *Lock) IsLocked(ctx context.Context) (bool, error) {
	rc, err := l.Redis()
	if err != nil {
		return false, err
	}
	n, err := rc.DoCache(ctx, rc.B().Hlen().Key(l.Name).Cache(), time.Minute).AsInt64()
	return n > 0, err
}

// HoldCount is the number of unreleased leases on the hold that ctx carries
// for this lock; 0 when it carries none. It costs no round trip.
func (l *Lock) HoldCount(ctx context.Context) (int, error) {
	if err := l.Check(); err != nil {
		return 0, err
	}
	return lease.HoldFrom(ctx, l.Scope, l.Name).Leases(), nil
}

// RemainTTL is the lock key's remaining time to live: 0 when the lock is
// free, -1ns when it is held with no expiry.
func (l *Lock) RemainTTL(ctx context.Context) (time.Duration, error) {
	rc, err := l.Redis()
	if err != nil {
		return 0, err
	}
	ms, err := rc.Do(ctx, rc.B().Pttl().Key(l.Name).Build()).AsInt64()
	switch {
	case err != nil:
		return 0, err
	case ms == -2:
		return 0, nil
	case ms < 0:
		return -1, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}
