package script

import (
	"context"
	"strconv"

	"github.com/redis/rueidis"
)

// TokenRaise is the script that raises a lock's fencing counter: quorum's
// write-back of the token it chose.
var TokenRaise = load("token_raise")

// RaiseToken runs token_raise: it raises the fencing counter of the lock
// name, redisson_lock_token:{NAME}, to at least floor (never lowering it) and
// returns the counter's value after. floor must be below 2^63, the range of
// INCR.
func RaiseToken(ctx context.Context, c rueidis.Client, name string, floor uint64) (uint64, error) {
	return TokenRaise.Exec(ctx, c, []string{TokenKey(name)}, []string{strconv.FormatUint(floor, 10)}).AsUint64()
}
