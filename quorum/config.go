package quorum

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/leasehold/leasehold/lease"
)

// Defaults of Config's fields, as each field's doc gives them.
const (
	defaultNodeTimeout = 100 * time.Millisecond
	defaultClockDrift  = 0.01
	defaultDriftMargin = 2 * time.Millisecond
	defaultRetryDelay  = 50 * time.Millisecond
)

// Config tunes Multi and RedLock (MultiWith, RedLockWith). A zero field
// takes its default.
type Config struct {
	// NodeTimeout bounds each member's part of one attempt, and each write
	// of the fencing token: a member that has not answered by then counts as
	// not held, and its lock's own cleanup undoes whatever the unanswered
	// request took. Keep it much shorter than the lease (redis.io suggests
	// 5-50ms for a 10s lease) so that a dead node costs little of it.
	// Default: 100ms.
	NodeTimeout time.Duration
	// ClockDrift is the share of the lease reserved for clocks that run at
	// different rates: the quorum's validity is TTL - elapsed - drift, with
	// drift = ClockDrift*TTL + DriftMargin. Default: 0.01 (1%).
	ClockDrift float64
	// DriftMargin is added to the drift, for timers that fire late.
	// Default: 2ms.
	DriftMargin time.Duration
	// RetryDelay is the mean delay before Acquire tries again after a failed
	// attempt: a random time in [RetryDelay/2, 3*RetryDelay/2), so that
	// contenders that failed together do not retry in step. Default: 50ms.
	RetryDelay time.Duration
}

// check reports a field out of range.
func (c Config) check() error {
	switch {
	case c.NodeTimeout < 0:
		return fmt.Errorf("%w: node timeout %v is negative", lease.ErrInvalid, c.NodeTimeout)
	case !(c.ClockDrift >= 0 && c.ClockDrift < 1):
		// Written so that NaN, which fails every comparison, is refused:
		// it would make the drift, and so the validity, meaningless.
		return fmt.Errorf("%w: clock drift %v is not in [0, 1)", lease.ErrInvalid, c.ClockDrift)
	case c.DriftMargin < 0:
		return fmt.Errorf("%w: drift margin %v is negative", lease.ErrInvalid, c.DriftMargin)
	case c.RetryDelay < 0:
		return fmt.Errorf("%w: retry delay %v is negative", lease.ErrInvalid, c.RetryDelay)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.NodeTimeout == 0 {
		c.NodeTimeout = defaultNodeTimeout
	}
	if c.ClockDrift == 0 {
		c.ClockDrift = defaultClockDrift
	}
	if c.DriftMargin == 0 {
		c.DriftMargin = defaultDriftMargin
	}
	if c.RetryDelay == 0 {
		c.RetryDelay = defaultRetryDelay
	}
	return c
}

// drift is the margin kept off a quorum whose members' leases run ttl.
func (c Config) drift(ttl time.Duration) time.Duration {
	return time.Duration(c.ClockDrift*float64(ttl)) + c.DriftMargin
}

// delay is a random pause before the next attempt.
func (c Config) delay() time.Duration {
	return c.RetryDelay/2 + rand.N(c.RetryDelay)
}
