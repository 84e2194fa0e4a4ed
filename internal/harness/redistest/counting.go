package redistest

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// Counting wraps a rueidis client and counts the round trips made through it:
// each Do, DoCache and DoMulti is one (a DoMulti is one pipelined round), each
// Receive (a subscription) one. Wrap a client with it and hand it to
// leasehold.New to measure a lock's round trips per operation.
type Counting struct {
	rueidis.Client
	rounds atomic.Int64
}

// NewCounting wraps c.
func NewCounting(c rueidis.Client) *Counting { return &Counting{Client: c} }

// Rounds is the number of round trips so far.
func (c *Counting) Rounds() int64 { return c.rounds.Load() }

// Do counts one round trip.
func (c *Counting) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.rounds.Add(1)
	return c.Client.Do(ctx, cmd)
}

// DoMulti counts one round trip for the whole pipeline.
func (c *Counting) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	c.rounds.Add(1)
	return c.Client.DoMulti(ctx, multi...)
}

// DoCache counts one round trip, even when the cache answers without one.
func (c *Counting) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	c.rounds.Add(1)
	return c.Client.DoCache(ctx, cmd, ttl)
}

// Receive counts one round trip for the subscription.
func (c *Counting) Receive(ctx context.Context, subscribe rueidis.Completed, fn func(rueidis.PubSubMessage)) error {
	c.rounds.Add(1)
	return c.Client.Receive(ctx, subscribe, fn)
}

// Dedicate counts the round trips of the dedicated client too.
func (c *Counting) Dedicate() (rueidis.DedicatedClient, func()) {
	dc, release := c.Client.Dedicate()
	return &countingDedicated{DedicatedClient: dc, rounds: &c.rounds}, release
}

type countingDedicated struct {
	rueidis.DedicatedClient
	rounds *atomic.Int64
}

func (c *countingDedicated) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.rounds.Add(1)
	return c.DedicatedClient.Do(ctx, cmd)
}

func (c *countingDedicated) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	c.rounds.Add(1)
	return c.DedicatedClient.DoMulti(ctx, multi...)
}
