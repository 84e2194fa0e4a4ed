package leasehold

import (
	"context"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/fence"
	"github.com/leasehold/leasehold/internal/core"
)

// Fence returns a fence.Redis that makes fenced writes through the Client's
// own connection, to keys of the Redis its locks are on: no second client
// to dial. Keys are written as given (WithKeyPrefix applies to lock names).
// Once Close has begun, its writes fail with an error wrapping
// lease.ErrClosed, as the Client's locks do. It dials nothing and allocates
// next to nothing: keep it or call Fence for each write.
func (c *Client) Fence() *fence.Redis {
	cc := c.core()
	if cc.Redis() == nil {
		return fence.NewRedis(nil) // a Client not made by Open or New: every write fails
	}
	return fence.NewRedis(fenceConn{cc.Redis(), cc})
}

// fenceConn is the Client's rueidis client as its fence.Redis sees it: one
// whose Do, through which a fenced write's script runs, refuses once Close
// has begun, whether or not Close closes the connection (New's stays open).
type fenceConn struct {
	rueidis.Client
	c *core.Client
}

func (f fenceConn) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	if err := f.c.Err(); err != nil {
		return rueidis.NewErrorResult(err)
	}
	return f.Client.Do(ctx, cmd)
}
