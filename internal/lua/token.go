package lua

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/script"
)

// tokenRaise raises a lock's fencing counter: quorum's write-back of the
// token it chose.
var tokenRaise = load("token_raise")

// RaiseToken runs token_raise: it raises the fencing counter of the lock
// name, redisson_lock_token:{NAME}, to at least floor (never lowering it) and
// returns the counter's value after. floor must be below 2^63, the range of
// INCR. The counter then lives at least lease, as after an acquisition.
func RaiseToken(ctx context.Context, c rueidis.Client, name string, floor uint64, lease time.Duration) (uint64, error) {
	return tokenRaise.exec(ctx, c, []string{script.KeysOf(name).Token},
		[]string{strconv.FormatUint(floor, 10), Ms(lease)}).AsUint64()
}
