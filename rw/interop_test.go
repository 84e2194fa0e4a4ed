package rw_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rw"
	"github.com/leasehold/leasehold/script"
)

// Redisson's own scripts, as RedissonReadLock and RedissonWriteLock send them
// (tryLockInnerAsync, unlockInnerAsync), run by a plain client: a stand-in
// for a Java service sharing the lock.
const (
	redissonReadLock = "local mode = redis.call('hget', KEYS[1], 'mode'); " +
		"if (mode == false) then " +
		"redis.call('hset', KEYS[1], 'mode', 'read'); " +
		"redis.call('hset', KEYS[1], ARGV[2], 1); " +
		"redis.call('set', KEYS[2] .. ':1', 1); " +
		"redis.call('pexpire', KEYS[2] .. ':1', ARGV[1]); " +
		"redis.call('pexpire', KEYS[1], ARGV[1]); " +
		"return nil; " +
		"end; " +
		"if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then " +
		"local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1); " +
		"local key = KEYS[2] .. ':' .. ind;" +
		"redis.call('set', key, 1); " +
		"redis.call('pexpire', key, ARGV[1]); " +
		"local remainTime = redis.call('pttl', KEYS[1]); " +
		"redis.call('pexpire', KEYS[1], math.max(remainTime, ARGV[1])); " +
		"return nil; " +
		"end;" +
		"return redis.call('pttl', KEYS[1]);"
	redissonReadUnlock = "local val = redis.call('get', KEYS[5]); " +
		"if val ~= false then return tonumber(val);end; " +
		"local mode = redis.call('hget', KEYS[1], 'mode'); " +
		"if (mode == false) then " +
		"redis.call(ARGV[3], KEYS[2], ARGV[1]); " +
		"redis.call('set', KEYS[5], 1, 'px', ARGV[4]); " +
		"return nil; " +
		"end; " +
		"local lockExists = redis.call('hexists', KEYS[1], ARGV[2]); " +
		"if (lockExists == 0) then return nil;end; " +
		"local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1); " +
		"if (counter == 0) then redis.call('hdel', KEYS[1], ARGV[2]); end;" +
		"redis.call('del', KEYS[3] .. ':' .. (counter+1)); " +
		"if (redis.call('hlen', KEYS[1]) > 1) then " +
		"local maxRemainTime = -3; " +
		"local keys = redis.call('hkeys', KEYS[1]); " +
		"for n, key in ipairs(keys) do " +
		"counter = tonumber(redis.call('hget', KEYS[1], key)); " +
		"if type(counter) == 'number' then " +
		"for i=counter, 1, -1 do " +
		"local remainTime = redis.call('pttl', KEYS[4] .. ':' .. key .. ':rwlock_timeout:' .. i); " +
		"maxRemainTime = math.max(remainTime, maxRemainTime);" +
		"end; " +
		"end; " +
		"end; " +
		"if maxRemainTime > 0 then " +
		"redis.call('pexpire', KEYS[1], maxRemainTime); " +
		"redis.call('set', KEYS[5], 0, 'px', ARGV[4]); " +
		"return 0; " +
		"end;" +
		"if mode == 'write' then " +
		"redis.call('set', KEYS[5], 0, 'px', ARGV[4]); " +
		"return 0;" +
		"end; " +
		"end; " +
		"redis.call('del', KEYS[1]); " +
		"redis.call(ARGV[3], KEYS[2], ARGV[1]); " +
		"redis.call('set', KEYS[5], 1, 'px', ARGV[4]); " +
		"return 1; "
	redissonWriteLock = "local mode = redis.call('hget', KEYS[1], 'mode'); " +
		"if (mode == false) then " +
		"redis.call('hset', KEYS[1], 'mode', 'write'); " +
		"redis.call('hset', KEYS[1], ARGV[2], 1); " +
		"redis.call('pexpire', KEYS[1], ARGV[1]); " +
		"return nil; " +
		"end; " +
		"if (mode == 'write') then " +
		"if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then " +
		"redis.call('hincrby', KEYS[1], ARGV[2], 1); " +
		"local currentExpire = redis.call('pttl', KEYS[1]); " +
		"redis.call('pexpire', KEYS[1], currentExpire + ARGV[1]); " +
		"return nil; " +
		"end; " +
		"end;" +
		"return redis.call('pttl', KEYS[1]);"
	redissonWriteUnlock = "local val = redis.call('get', KEYS[3]); " +
		"if val ~= false then return tonumber(val);end; " +
		"local mode = redis.call('hget', KEYS[1], 'mode'); " +
		"if (mode == false) then " +
		"redis.call(ARGV[4], KEYS[2], ARGV[1]); " +
		"redis.call('set', KEYS[3], 1, 'px', ARGV[5]); " +
		"return nil; " +
		"end;" +
		"if (mode == 'write') then " +
		"local lockExists = redis.call('hexists', KEYS[1], ARGV[3]); " +
		"if (lockExists == 0) then " +
		"return nil;" +
		"else " +
		"local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); " +
		"if (counter > 0) then " +
		"redis.call('pexpire', KEYS[1], ARGV[2]); " +
		"redis.call('set', KEYS[3], 0, 'px', ARGV[5]); " +
		"return 0; " +
		"else " +
		"redis.call('hdel', KEYS[1], ARGV[3]); " +
		"if (redis.call('hlen', KEYS[1]) == 1) then " +
		"redis.call('del', KEYS[1]); " +
		"redis.call(ARGV[4], KEYS[2], ARGV[1]); " +
		"else " +
		"redis.call('hset', KEYS[1], 'mode', 'read'); " +
		"end; " +
		"redis.call('set', KEYS[3], 1, 'px', ARGV[5]); " +
		"return 1; " +
		"end; " +
		"end; " +
		"end; " +
		"return nil;"
	javaOwner = "3f1c5a7e-0000-4000-8000-00000000java:1"
)

// java is a Redisson client on one lock name.
type java struct {
	t    *testing.T
	rc   rueidis.Client
	name string
	reqs int
}

// lock runs a Redisson lock script: true when the Java side got the lock.
func (j *java) lock(src string, keys []string, owner string) bool {
	j.t.Helper()
	err := j.rc.Do(context.Background(), j.rc.B().Eval().Script(src).Numkeys(int64(len(keys))).Key(keys...).
		Arg("30000", owner, javaOwner+":write").Build()).Error()
	if rueidis.IsRedisNil(err) {
		return true
	}
	if err != nil {
		j.t.Fatalf("Redisson lock script: %v", err)
	}
	return false // it returned the holder's pttl
}

func (j *java) read() bool {
	return j.lock(redissonReadLock, []string{j.name, script.KeysOf(j.name).ReadHolds(javaOwner)}, javaOwner)
}

func (j *java) write() bool {
	return j.lock(redissonWriteLock, []string{j.name}, javaOwner+":write")
}

func (j *java) unlock(src string, keys, args []string) {
	j.t.Helper()
	err := j.rc.Do(context.Background(), j.rc.B().Eval().Script(src).Numkeys(int64(len(keys))).Key(keys...).
		Arg(args...).Build()).Error()
	if err != nil && !rueidis.IsRedisNil(err) {
		j.t.Fatalf("Redisson unlock script: %v", err)
	}
}

func (j *java) latch() string {
	j.reqs++
	return script.KeysOf(j.name).UnlockLatch("java-req-" + strconv.Itoa(j.reqs))
}

func (j *java) readUnlock() {
	k := script.KeysOf(j.name)
	j.unlock(redissonReadUnlock,
		// KEYS[4] is Redisson's getKeyPrefix: the timeout prefix cut before ":OWNER".
		[]string{j.name, k.RWChannel, k.ReadHolds(javaOwner), "{" + j.name + "}", j.latch()},
		[]string{"0", javaOwner, "publish", "5000"})
}

func (j *java) writeUnlock() {
	j.unlock(redissonWriteUnlock,
		[]string{j.name, script.KeysOf(j.name).RWChannel, j.latch()},
		[]string{"1", "30000", javaOwner + ":write", "publish", "5000"})
}

func TestRedissonInterop(t *testing.T) {
	srv := redistest.Start(t)
	j := &java{t: t, rc: srv.Client(), name: "interop"}
	c, wc := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 30*time.Second)
	l, w := rw.New(c, "interop"), rw.New(wc, "interop")

	// Java and Go read together; neither writes.
	if !j.read() {
		t.Fatal("Redisson could not read a free lock")
	}
	rl := mustAcquire(t, l.Read(), ctx)
	if j.write() {
		t.Fatal("Redisson wrote while readers hold")
	}
	_, err := w.Write().TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	// Java's read unlock finds our hold key alive and keeps the lock, at our
	// hold's TTL.
	f := w.Write().AcquireAsync(ctx)
	eventually(t, 5*time.Second, "writer waiting", func() bool { return waiters(wc) == 1 })
	j.readUnlock()
	if m := hash(t, srv, "interop"); m["mode"] != "read" || len(m) != 2 || pttl(t, srv, "interop") <= 0 {
		t.Fatalf("lock after Redisson's read unlock: %v", m)
	}
	// Our release frees it and wakes the writer.
	release(t, rl)
	wl := result(t, f, woken)

	// Go writes: Java neither reads nor writes, and reads once it is gone.
	if j.read() || j.write() {
		t.Fatal("Redisson got in while leasehold writes")
	}
	release(t, wl)
	if !j.read() {
		t.Fatal("Redisson could not read after leasehold's write")
	}
	j.readUnlock()
	if exists(t, srv, "interop") {
		t.Fatalf("lock left after Redisson's read unlock: %v", hash(t, srv, "interop"))
	}

	// Java writes: Go readers wait and are all woken by Redisson's write
	// unlock (message "1"); Redisson's lease is 30s.
	if !j.write() {
		t.Fatal("Redisson could not write a free lock")
	}
	f1, f2 := l.Read().AcquireAsync(ctx), w.Read().AcquireAsync(ctx)
	eventually(t, 5*time.Second, "readers waiting", func() bool { return waiters(c) == 1 && waiters(wc) == 1 })
	j.writeUnlock()
	r1, r2 := result(t, f1, woken), result(t, f2, woken)
	// Java reads alongside, and a Go writer waits for everyone.
	if !j.read() {
		t.Fatal("Redisson could not join leasehold readers")
	}
	release(t, r1)
	release(t, r2)
	_, err = w.Write().TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	f = w.Write().AcquireAsync(ctx)
	eventually(t, 5*time.Second, "writer waiting", func() bool { return waiters(wc) == 1 })
	j.readUnlock() // Redisson publishes "0": the writer wakes
	release(t, result(t, f, woken))
}
