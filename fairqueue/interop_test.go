package fairqueue_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
)

// What Redisson's RedissonFairLock sends (tryLockInnerAsync, the variant that
// queues, and unlockInnerAsync), condensed, run by a plain client: a stand-in
// for a Java service on the same lock. Redisson passes its own clock.
const (
	redissonFairLock = `
while true do
  local head = redis.call('lindex', KEYS[2], 0)
  if head == false then break end
  local timeout = redis.call('zscore', KEYS[3], head)
  if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[4]) then
    redis.call('zrem', KEYS[3], head); redis.call('lpop', KEYS[2])
  else break end
end
if (redis.call('exists', KEYS[1]) == 0) and ((redis.call('exists', KEYS[2]) == 0)
    or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then
  redis.call('lpop', KEYS[2]); redis.call('zrem', KEYS[3], ARGV[2])
  local keys = redis.call('zrange', KEYS[3], 0, -1)
  for i = 1, #keys, 1 do redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), keys[i]) end
  redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if redis.call('zscore', KEYS[3], ARGV[2]) ~= false then
  return math.max(0, redis.call('pttl', KEYS[1]))
end
local last = redis.call('lindex', KEYS[2], -1)
local ttl
if last ~= false and last ~= ARGV[2] and redis.call('zscore', KEYS[3], last) ~= false then
  ttl = tonumber(redis.call('zscore', KEYS[3], last)) - tonumber(ARGV[4])
else
  ttl = redis.call('pttl', KEYS[1])
end
if redis.call('zadd', KEYS[3], ttl + tonumber(ARGV[3]) + tonumber(ARGV[4]), ARGV[2]) == 1 then
  redis.call('rpush', KEYS[2], ARGV[2])
end
return ttl`
	redissonFairUnlock = `
local val = redis.call('get', KEYS[5])
if val ~= false then return tonumber(val) end
while true do
  local head = redis.call('lindex', KEYS[2], 0)
  if head == false then break end
  local timeout = redis.call('zscore', KEYS[3], head)
  if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[4]) then
    redis.call('zrem', KEYS[3], head); redis.call('lpop', KEYS[2])
  else break end
end
if (redis.call('exists', KEYS[1]) == 0) then
  local next = redis.call('lindex', KEYS[2], 0)
  if next ~= false then redis.call(ARGV[5], KEYS[4] .. ':' .. next, ARGV[1]) end
  redis.call('set', KEYS[5], 1, 'px', ARGV[6])
  return 1
end
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2]); redis.call('set', KEYS[5], 0, 'px', ARGV[6])
  return 0
end
redis.call('del', KEYS[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[6])
local next = redis.call('lindex', KEYS[2], 0)
if next ~= false then redis.call(ARGV[5], KEYS[4] .. ':' .. next, ARGV[1]) end
return 1`
	javaFairOwner = "3f1c5a7e-0000-4000-8000-00000000java:7"
)

func nowMs() string { return strconv.FormatInt(time.Now().UnixMilli(), 10) }

// javaFairLock runs Redisson's fair tryLock: true when the Java side holds
// the lock, false when it queued (or refreshed nothing, being queued).
func javaFairLock(t *testing.T, rc rueidis.Client, name string) bool {
	t.Helper()
	err := rc.Do(context.Background(), rc.B().Eval().Script(redissonFairLock).Numkeys(3).
		Key(name, "redisson_lock_queue:{"+name+"}", "redisson_lock_timeout:{"+name+"}").
		Arg("30000", javaFairOwner, "5000", nowMs()).Build()).Error()
	if rueidis.IsRedisNil(err) {
		return true
	}
	if err != nil {
		t.Fatalf("Redisson fair lock script: %v", err)
	}
	return false
}

func javaFairUnlock(t *testing.T, rc rueidis.Client, name string) {
	t.Helper()
	err := rc.Do(context.Background(), rc.B().Eval().Script(redissonFairUnlock).Numkeys(5).
		Key(name, "redisson_lock_queue:{"+name+"}", "redisson_lock_timeout:{"+name+"}",
			"redisson_lock__channel:{"+name+"}", "redisson_unlock_latch:{"+name+"}:java-"+strconv.FormatInt(time.Now().UnixNano(), 36)).
		Arg("0", "30000", javaFairOwner, nowMs(), "publish", "5000").Build()).Error()
	if err != nil && !rueidis.IsRedisNil(err) {
		t.Fatalf("Redisson fair unlock script: %v", err)
	}
}

// A Redisson client and leasehold share one fair lock: each excludes the
// other, each queues behind the other, and each release wakes the other's
// waiter on its own channel.
func TestRedissonInterop(t *testing.T) {
	srv := redistest.Start(t)
	java := srv.Client()
	c := open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	// A 30s queue timeout (10s refresh): a handoff within 2s is a message.
	l := fairqueue.New(c, "shared", leasehold.WithQueueTimeout(30*time.Second))

	// Java holds: leasehold is excluded, queues, and wakes on Java's unlock.
	if !javaFairLock(t, java, "shared") {
		t.Fatal("Redisson could not take a free fair lock")
	}
	_, err := l.TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	waiting := goAcquire(l, ctx)
	queued(t, srv, "shared", 1)
	eventually(t, 5*time.Second, "waiter subscribed", func() bool { return c.Stats().Subscriptions == 1 })
	unlocked := time.Now()
	javaFairUnlock(t, java, "shared")
	ls := await(t, waiting, 2*time.Second, "leasehold waiter after Redisson's unlock")
	t.Logf("woke %v after Redisson's unlock", time.Since(unlocked))

	// leasehold holds: Redisson is excluded and queues; leasehold's release
	// tells it on its channel, and it takes the lock as the head.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	heard := make(chan string, 1)
	sub := srv.Client()
	subscribed := make(chan struct{})
	defer func() { cancel(); <-subscribed }()
	go func() {
		defer close(subscribed)
		_ = sub.Receive(sctx, sub.B().Subscribe().Channel("redisson_lock__channel:{shared}:"+javaFairOwner).Build(),
			func(m rueidis.PubSubMessage) {
				select {
				case heard <- m.Message:
				default:
				}
			})
	}()
	eventually(t, 5*time.Second, "Java's channel subscribed", func() bool {
		n, err := srv.Do("PUBSUB", "NUMSUB", "redisson_lock__channel:{shared}:"+javaFairOwner).ToArray()
		if err != nil || len(n) != 2 {
			return false
		}
		k, _ := n[1].AsInt64()
		return k == 1
	})
	if javaFairLock(t, java, "shared") {
		t.Fatal("Redisson took a fair lock leasehold holds")
	}
	if q := queue(t, srv, "shared"); len(q) != 1 || q[0] != javaFairOwner {
		t.Fatalf("queue %v, want the Java waiter", q)
	}
	release(t, ls)
	select {
	case msg := <-heard:
		if msg != "0" {
			t.Fatalf("Java's channel got %q, want Redisson's unlock message 0", msg)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("leasehold's release did not tell the Java head")
	}
	if !javaFairLock(t, java, "shared") {
		t.Fatal("the Java head could not take the lock leasehold released")
	}
	_, err = l.TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	javaFairUnlock(t, java, "shared")
}
