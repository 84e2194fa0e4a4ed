package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

// Redisson's own scripts, as RedissonLock sends them (tryLockInnerAsync and
// unlockInnerAsync), run by a plain client: a stand-in for a Java service.
const (
	redissonLock = "if ((redis.call('exists', KEYS[1]) == 0) " +
		"or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then " +
		"redis.call('hincrby', KEYS[1], ARGV[2], 1); " +
		"redis.call('pexpire', KEYS[1], ARGV[1]); " +
		"return nil; " +
		"end; " +
		"return redis.call('pttl', KEYS[1]);"
	redissonUnlock = "local val = redis.call('get', KEYS[3]); " +
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
	javaOwner = "3f1c5a7e-0000-4000-8000-00000000java:1"
)

// javaLock runs Redisson's lock script: true when the Java side holds the lock.
func javaLock(t *testing.T, rc rueidis.Client, name string) bool {
	t.Helper()
	err := rc.Do(context.Background(), rc.B().Eval().Script(redissonLock).Numkeys(1).Key(name).
		Arg("30000", javaOwner).Build()).Error()
	if rueidis.IsRedisNil(err) {
		return true
	}
	if err != nil {
		t.Fatalf("Redisson lock script: %v", err)
	}
	return false // it returned the holder's pttl
}

// javaUnlock runs Redisson's unlock script for the Java owner.
func javaUnlock(t *testing.T, rc rueidis.Client, name string) {
	t.Helper()
	err := rc.Do(context.Background(), rc.B().Eval().Script(redissonUnlock).Numkeys(3).
		Key(name, "redisson_lock__channel:{"+name+"}", "redisson_unlock_latch:{"+name+"}:java-req-1").
		Arg("0", "30000", javaOwner, "publish", "5000").Build()).Error()
	if err != nil {
		t.Fatalf("Redisson unlock script: %v", err)
	}
}

func TestRedissonInterop(t *testing.T) {
	srv := redistest.Start(t)
	java := srv.Client()
	c := open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	l := rlock.New(c, "shared")

	// Java holds: leasehold is excluded, and wakes on Java's unlock.
	if !javaLock(t, java, "shared") {
		t.Fatal("Redisson could not take a free lock")
	}
	_, err := l.TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	f := l.AcquireAsync(ctx)
	eventually(t, 5*time.Second, "waiter subscribed", func() bool { return c.Stats().Subscriptions == 1 })
	unlocked := time.Now()
	javaUnlock(t, java, "shared")
	ls, err := f.Result()
	if err != nil {
		t.Fatalf("leasehold waiter after Redisson unlock: %v", err)
	}
	// Redisson's lease was 30s: only the unlock message can explain this.
	if el := time.Since(unlocked); el > 2*time.Second {
		t.Fatalf("woke %v after Redisson's unlock", el)
	}

	// leasehold holds: Redisson is excluded, and its unlock cannot free it.
	if javaLock(t, java, "shared") {
		t.Fatal("Redisson took a lock leasehold holds")
	}
	javaUnlock(t, java, "shared")
	if n, _ := srv.Do("EXISTS", "shared").AsInt64(); n != 1 {
		t.Fatal("Redisson's unlock freed leasehold's lock")
	}
	release(t, ls)
	if !javaLock(t, java, "shared") {
		t.Fatal("Redisson could not take the lock after leasehold released it")
	}
}
