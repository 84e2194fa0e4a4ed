package semaphore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/script"
	"github.com/leasehold/leasehold/semaphore"
)

// Redisson's own scripts, as RedissonPermitExpirableSemaphore sends them
// (tryAcquireAsync(List, long) and tryReleaseAsync(String), Redisson at
// 66863978b4a9), run by a plain client: a stand-in for a Java service.
// Redisson passes its clock's time, and ids as raw bytes (its API names them
// by their hex).
const (
	redissonAcquire = "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, ARGV[1]); " +
		"if #expiredIds > 0 then " +
		"redis.call('zrem', KEYS[2], unpack(expiredIds)); " +
		"local value = redis.call('incrby', KEYS[1], #expiredIds); " +
		"if tonumber(value) > 0 then " +
		"redis.call(ARGV[5], KEYS[3], value); " +
		"end;" +
		"end; " +
		"local value = redis.call('get', KEYS[1]); " +
		"if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then " +
		"redis.call('decrby', KEYS[1], ARGV[1]); " +
		"for i = 6, #ARGV, 1 do " +
		"redis.call('zadd', KEYS[2], ARGV[2], ARGV[i]); " +
		"end; " +

		"local ttl = redis.call('pttl', KEYS[1]); " +
		"if ttl > 0 then " +
		"redis.call('pexpire', KEYS[2], ttl); " +
		"end; " +

		"return 'OK'; " +
		"end; " +
		"local v = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES'); " +
		"if v[1] ~= nil and v[2] ~= ARGV[4] then " +
		"return ':' .. tostring(v[2]); " +
		"end " +
		"return nil;"
	redissonRelease = "local expire = redis.call('zscore', KEYS[3], ARGV[1]);" +
		"local removed = redis.call('zrem', KEYS[3], ARGV[1]);" +
		"if tonumber(removed) ~= 1 then " +
		"return 0;" +
		"end;" +
		"local value = redis.call('incrby', KEYS[1], ARGV[2]); " +
		"redis.call(ARGV[4], KEYS[2], value); " +
		"if tonumber(expire) <= tonumber(ARGV[3]) then " +
		"return 0;" +
		"end;" +
		"return 1;"
	// nonExpirable is the expiry Redisson gives a permit taken with no lease.
	nonExpirable = "922337203685477"
)

// java is a Redisson client on a semaphore: its permits' ids, as its API
// knows them (hex).
type java struct {
	t    *testing.T
	rc   rueidis.Client
	name string
}

func (j java) keys(order ...string) []string {
	k := map[string]string{"name": j.name, "timeout": "{" + j.name + "}:timeout", "channel": "redisson_sc:{" + j.name + "}"}
	out := make([]string, len(order))
	for i, o := range order {
		out[i] = k[o]
	}
	return out
}

// acquire runs Redisson's acquire script for n permits with the given lease
// (0: none, the permit never expires), timed by the Java client's clock
// (skew added to the real one). It returns the permit ids when it got them,
// or Redisson's answer when it did not: "" (none expiring) or ":EXPIRY".
func (j java) acquire(n int, lease, skew time.Duration) (ids []string, answer string) {
	j.t.Helper()
	now := time.Now().Add(skew).UnixMilli()
	expiry := nonExpirable
	if lease > 0 {
		expiry = strconv.FormatInt(now+lease.Milliseconds(), 10)
	}
	args := []string{strconv.Itoa(n), expiry, strconv.FormatInt(now, 10), nonExpirable, "publish"}
	for range n {
		id := javaID()
		ids = append(ids, hex.EncodeToString([]byte(id)))
		args = append(args, id)
	}
	res, err := j.rc.Do(context.Background(), j.rc.B().Eval().Script(redissonAcquire).Numkeys(3).
		Key(j.keys("name", "timeout", "channel")...).Arg(args...).Build()).ToString()
	switch {
	case rueidis.IsRedisNil(err):
		return nil, ""
	case err != nil:
		j.t.Fatalf("Redisson acquire script: %v", err)
	case res == "OK":
		return ids, "OK"
	}
	return nil, res
}

// release runs Redisson's release script for the permit whose id (hex) Java
// names: true when it was held and had not expired.
func (j java) release(id string) bool {
	j.t.Helper()
	raw, err := hex.DecodeString(id)
	if err != nil {
		j.t.Fatal(err)
	}
	n, err := j.rc.Do(context.Background(), j.rc.B().Eval().Script(redissonRelease).Numkeys(3).
		Key(j.keys("name", "channel", "timeout")...).
		Arg(string(raw), "1", strconv.FormatInt(time.Now().UnixMilli(), 10), "publish").Build()).AsInt64()
	if err != nil {
		j.t.Fatalf("Redisson release script: %v", err)
	}
	return n == 1
}

// javaID is an id as Redisson's generateId makes them: 16 random bytes.
func javaID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return string(b[:])
}

// heard is the next message on ch, read as Redisson's SemaphorePubSub reads
// it: a Long, how many of its waiters to wake.
func heard(t *testing.T, ch <-chan string) int64 {
	t.Helper()
	select {
	case m := <-ch:
		n, err := strconv.ParseInt(m, 10, 64)
		if err != nil {
			t.Fatalf("message %q: Redisson's LongCodec cannot read it: %v", m, err)
		}
		return n
	case <-time.After(5 * time.Second):
		t.Fatal("no message on the semaphore's channel within 5s")
		return 0
	}
}

// Each side excludes the other when the semaphore is full, and each wakes
// the other's waiters: a Java release wakes a leasehold waiter at once (not
// at the 30s lease), and a leasehold release publishes a count that
// Redisson's SemaphorePubSub reads and wakes that many waiters with, after
// which Java's acquire gets the permit.
func TestRedissonInteropExcludeAndWake(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	j := java{t, srv.Client(), "shared"}
	s := newSet(t, c, "shared", 2)
	heardBy := locktest.Subscribe(t, srv, script.KeysOf("shared").SemaphoreChannel)

	// Java fills the semaphore: leasehold is excluded, and waits.
	ids, answer := j.acquire(2, 30*time.Second, 0)
	if answer != "OK" {
		t.Fatalf("Redisson could not take 2 free permits: %q", answer)
	}
	_, err := s.TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	f := s.AcquireAsync(ctx)
	eventually(t, 5*time.Second, "leasehold waiting", func() bool { return waiters(c) == 1 })
	released := time.Now()
	if !j.release(ids[0]) {
		t.Fatal("Redisson could not release its own permit")
	}
	ls := result(t, f, 5*time.Second)
	if d := time.Since(released); d > 2*time.Second {
		t.Fatalf("leasehold woke %v after Redisson's release", d)
	}

	// Full again (Java 1, leasehold 1): Java is excluded, and told when to
	// try again: the earliest expiry, Redisson's ":EXPIRY" answer.
	if _, answer := j.acquire(1, 30*time.Second, 0); !strings.HasPrefix(answer, ":") {
		t.Fatalf("Redisson's acquire on a full semaphore answered %q, want :EXPIRY", answer)
	}
	drain(heardBy)
	release(t, ls)
	if n := heard(t, heardBy); n != 1 {
		t.Fatalf("leasehold's release published %d, want 1: the permits available, which Redisson wakes that many waiters for", n)
	}
	if ids, answer := j.acquire(1, 30*time.Second, 0); answer != "OK" {
		t.Fatalf("Redisson could not take the permit leasehold gave back: %q", answer)
	} else {
		j.release(ids[0])
	}
	j.release(ids[1])
}

// Each side gives back the other's expired permits: Redisson's acquire
// takes leasehold's permits once their fixed lease ran out, and leasehold's
// waiter (woken at the earliest expiry its attempt reported) takes Java's
// once its lease ran out. Java's permits without a lease never expire: not
// given back.
func TestRedissonInteropReclaim(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	j := java{t, srv.Client(), "reclaim"}
	newSet(t, c, "reclaim", 2)

	// leasehold's permits with a 200ms fixed lease, never released.
	ls := mustAcquire(t, semaphore.New(c, "reclaim", leasehold.WithLeaseTime(200*time.Millisecond)).Weighted(2), ctx)
	if _, answer := j.acquire(2, 30*time.Second, 0); !strings.HasPrefix(answer, ":") {
		t.Fatalf("Redisson took permits leasehold holds: %q", answer)
	}
	<-ls.Lost()
	time.Sleep(20 * time.Millisecond) // past the expiry on the server, not only the local deadline
	ids, answer := j.acquire(2, 200*time.Millisecond, 0)
	if answer != "OK" {
		t.Fatalf("Redisson did not get leasehold's expired permits back: %q", answer)
	}
	if err := ls.Release(ctx); err == nil {
		t.Fatal("leasehold's release of permits Redisson took back succeeded")
	}
	if n := count(t, srv, "reclaim"); n != 0 {
		t.Fatalf("%d available after the late release, want 0: given back twice", n)
	}

	// Java's permits, 200ms lease: leasehold's waiter takes them when they
	// run out (its own lease is 30s: the expiry is what wakes it).
	start := time.Now()
	got := mustAcquire(t, semaphore.New(c, "reclaim").Weighted(2), ctx)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("leasehold took Java's expired permits after %v, want about 200ms", d)
	}
	if j.release(ids[0]) {
		t.Fatal("Redisson released a permit leasehold took back")
	}
	release(t, got)

	// A permit Java took with no lease never expires: leasehold does not
	// take it back, and its failed attempt finds no expiry to wait for.
	forever, answer := j.acquire(2, 0, 0)
	if answer != "OK" {
		t.Fatalf("Redisson acquire without a lease: %q", answer)
	}
	_, err := semaphore.New(c, "reclaim").TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	if n := taken(t, srv, "reclaim"); n != 2 {
		t.Fatalf("%d permits held, want Java's 2 that never expire", n)
	}
	for _, id := range forever {
		if !j.release(id) {
			t.Fatal("Redisson could not release its permit")
		}
	}
}

// leasehold's permit ids are 16 bytes, as Redisson's: Java's API names a
// leasehold permit by its hex and releases it (an operator's repair from
// the Java side); the leasehold holder hears of it at once.
func TestRedissonReleasesLeaseholdPermit(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv, leasehold.WithWatchdog(300*time.Millisecond))
	ctx := ctxTimeout(t, 10*time.Second)
	j := java{t, srv.Client(), "ids"}
	ls := mustAcquire(t, newSet(t, c, "ids", 1), ctx)
	id := hex.EncodeToString([]byte(lua.PermitID(ls.Owner(), 0)))
	if len(id) != 32 {
		t.Fatalf("permit id %s is not 16 bytes", id)
	}
	if !j.release(id) {
		t.Fatalf("Redisson could not release leasehold's permit %s", id)
	}
	select {
	case <-ls.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the holder did not learn its permit was released")
	}
	wantErr(t, ls.Err(), lease.ErrLost)
}

// A Java client whose clock runs ahead of the server's gives permits back
// early: leasehold's permit, renewed by its watchdog, expires a lease after
// its last renewal by the server's clock, yet Java, 2s ahead with a 1s
// lease, counts it expired and takes it. This is why the package doc asks
// for Java clocks kept close to the server's.
func TestRedissonSkewedClockTakesLivePermit(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv, leasehold.WithWatchdog(time.Second))
	ctx := ctxTimeout(t, 10*time.Second)
	j := java{t, srv.Client(), "skew"}
	ls := mustAcquire(t, newSet(t, c, "skew", 1), ctx)
	if _, answer := j.acquire(1, time.Second, 0); answer == "OK" {
		t.Fatal("Redisson with a true clock took a live permit")
	}
	if _, answer := j.acquire(1, time.Second, 2*time.Second); answer != "OK" {
		t.Fatalf("Redisson 2s ahead did not take the live permit: %q", answer)
	}
	select {
	case <-ls.Lost():
		t.Logf("the leasehold holder learned at its next renewal: %v", ls.Err())
	case <-time.After(5 * time.Second):
		t.Fatal("the holder did not learn its permit was taken")
	}
}

func drain(ch <-chan string) {
	for {
		select {
		case <-ch:
		case <-time.After(50 * time.Millisecond):
			return
		}
	}
}
