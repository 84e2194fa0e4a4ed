package leasehold

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/lease"
)

// Check reports whether the Client is healthy, for a health probe: nil
// while Redis answers a PING and every watchdog lease of the Client was
// renewed in time (none has gone two renewal rounds, two thirds of its
// lease, without a confirmed renewal). Otherwise an error reading
// "leasehold: check: ..." that says what is wrong: it wraps lease.ErrClosed
// after Close, ctx's error or the PING's (lease.ErrRedis and the reply when
// Redis answered with an error), or one *lease.Error per late lease, naming
// its lock. It costs one round trip and changes nothing.
func (c *Client) Check(ctx context.Context) error {
	cc := c.core()
	if err := cc.Err(); err != nil {
		return fmt.Errorf("leasehold: check: %w", err)
	}
	rc := cc.Redis()
	if err := rc.Do(ctx, rc.B().Ping().Build()).Error(); err != nil {
		if _, ok := rueidis.IsRedisErr(err); ok {
			err = fmt.Errorf("%w: %w", lease.ErrRedis, err)
		}
		return fmt.Errorf("leasehold: check: Redis does not answer PING: %w", err)
	}
	if late := cc.Keeper().Late(); len(late) > 0 {
		return fmt.Errorf("leasehold: check: %d of %d leases not renewed in time: %w", len(late), cc.Keeper().Len(), errors.Join(late...))
	}
	return nil
}
