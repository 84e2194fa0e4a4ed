package redistest

import (
	"context"

	"github.com/redis/rueidis"
)

// Redisson's own RLock scripts, as RedissonLock sends them
// (tryLockInnerAsync and unlockInnerAsync), for tests that run them with a
// plain client as a stand-in for a Java service.
const (
	RedissonLockScript = "if ((redis.call('exists', KEYS[1]) == 0) " +
		"or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then " +
		"redis.call('hincrby', KEYS[1], ARGV[2], 1); " +
		"redis.call('pexpire', KEYS[1], ARGV[1]); " +
		"return nil; " +
		"end; " +
		"return redis.call('pttl', KEYS[1]);"
	RedissonUnlockScript = "local val = redis.call('get', KEYS[3]); " +
		"if val ~= false then return tonumber(val);end; " +
		"if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; " +
		"local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); " +
		"if (counter > 0) then " +
		"redis.call('pexpire', KEYS[1], ARGV[2]); " +
		"redis.call('set', KEYS[3], 0, 'px', ARGV[5]); " +
		"return 0; " +
		"else " +
		"redis.call('del', KEYS[1]); " +
		"redis.call(ARGV[4], KEYS[2], ARGV[1]); " +
		"redis.call('set', KEYS[3], 1, 'px', ARGV[5]); " +
		"return 1; " +
		"end; "
	// JavaOwner is the owner field the stand-in Java service locks under
	// (Redisson's UUID:THREAD_ID).
	JavaOwner = "3f1c5a7e-0000-4000-8000-00000000java:1"
)

// RedissonLock runs Redisson's lock script for JavaOwner with a 30s lease: it
// reports whether the Java side now holds the lock.
func RedissonLock(ctx context.Context, rc rueidis.Client, name string) (bool, error) {
	err := rc.Do(ctx, rc.B().Eval().Script(RedissonLockScript).Numkeys(1).Key(name).
		Arg("30000", JavaOwner).Build()).Error()
	if rueidis.IsRedisNil(err) {
		return true, nil
	}
	return false, err // nil: it returned the holder's pttl
}

// RedissonUnlock runs Redisson's unlock script for JavaOwner, publishing with
// publish: "publish", or "spublish" as Redisson does in Redis Cluster with
// sharded subscriptions (its default there).
func RedissonUnlock(ctx context.Context, rc rueidis.Client, name, publish string) error {
	return rc.Do(ctx, rc.B().Eval().Script(RedissonUnlockScript).Numkeys(3).
		Key(name, "redisson_lock__channel:{"+name+"}", "redisson_unlock_latch:{"+name+"}:java-req-1").
		Arg("0", "30000", JavaOwner, publish, "5000").Build()).Error()
}
