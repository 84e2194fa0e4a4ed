package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/rw"
	"github.com/leasehold/leasehold/script"
)

// A failed rueidis.NewClient (a wrong password, plain text to a TLS port)
// leaves rueidis' reconnect delay sleeping for up to a second before it ends
// on its own; it is not a goroutine of ours.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"))
}

// cmd runs the command line args against srv and returns what it printed.
func cmd(t *testing.T, srv *redistest.Server, stdin string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := run(ctx, append([]string{"-addr", srv.Addr()}, args...), strings.NewReader(stdin), &out)
	if testing.Verbose() {
		t.Logf("$ leasehold %s\n%s", strings.Join(args, " "), out.String())
	}
	return out.String(), err
}

// mustCmd is cmd that fails the test on an error.
func mustCmd(t *testing.T, srv *redistest.Server, stdin string, args ...string) string {
	t.Helper()
	out, err := cmd(t, srv, stdin, args...)
	if err != nil {
		t.Fatalf("leasehold %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// wantLines checks that out holds a line matching each regexp, in order.
func wantLines(t *testing.T, out string, res ...string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	i := 0
	for _, re := range res {
		rx := regexp.MustCompile(re)
		for i < len(lines) && !rx.MatchString(lines[i]) {
			i++
		}
		if i == len(lines) {
			t.Fatalf("no line matching %q (in order) in:\n%s", re, out)
		}
		i++
	}
}

// name is this process's Clients' name by default: HOST:PID.
func name(t *testing.T) string {
	t.Helper()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}

// here matches what inspect shows of a holder whose Client this test
// process opened with its default name: NAME at ADDR.
func here() string {
	host, _ := os.Hostname()
	return regexp.QuoteMeta(host+":"+strconv.Itoa(os.Getpid())) + ` at 127\.0\.0\.1:\d+`
}

func open(t *testing.T, srv *redistest.Server, opts ...leasehold.Option) *leasehold.Client {
	t.Helper()
	c, err := leasehold.Open(srv.Option(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func acquire(t *testing.T, l lease.Locker, ctx context.Context) *lease.Lease {
	t.Helper()
	ls, err := l.Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	return ls
}

// eventually polls cond every few ms until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func queueLen(t *testing.T, srv *redistest.Server, name string) int64 {
	t.Helper()
	n, err := srv.Do("LLEN", script.KeysOf(name).FairQueue).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestInspectRLock(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := context.Background()
	l := rlock.New(c, "orders")
	outer := acquire(t, l, ctx)
	inner := acquire(t, l, outer.Context())

	out := mustCmd(t, srv, "", "inspect", "orders")
	wantLines(t, out,
		`^name +orders$`,
		`^kind +rlock \(reentrant lock\)$`,
		`^state +held by 1 owner$`,
		`^ttl +(29|30)(\.\d+)?s$`,
		fmt.Sprintf(`^token +%d$`, inner.Token()),
		`^holders$`,
		`^ +OWNER +HOLDS +CLIENT$`,
		fmt.Sprintf(`^ +%s +2 +%s$`, regexp.QuoteMeta(outer.Owner()), here()))
	j := inspectJSON(t, srv, "orders")
	if j.Name != "orders" || j.Kind != "rlock" || j.RedisType != "hash" || j.Mode != nil {
		t.Errorf("-json: name %q kind %q redis_type %q mode %v", j.Name, j.Kind, j.RedisType, j.Mode)
	}
	if j.TTLms == nil || *j.TTLms < 28000 || *j.TTLms > 30000 || j.Token != inner.Token() {
		t.Errorf("-json: ttl_ms %v token %d, want about 30000, %d", j.TTLms, j.Token, inner.Token())
	}
	if len(j.Holders) != 1 || j.Holders[0].Owner != outer.Owner() || j.Holders[0].Count != 2 ||
		j.Holders[0].Write || j.Holders[0].ReadsTTLms != nil {
		t.Errorf("-json: holders %+v", j.Holders)
	}
	if j.Waiters == nil || len(j.Waiters) != 0 || j.WaitingWriters == nil || len(j.WaitingWriters) != 0 {
		t.Errorf("-json: waiters %v, waiting_writers %v: want [], not null", j.Waiters, j.WaitingWriters)
	}

	inner.Release(ctx)
	outer.Release(ctx)
	wantLines(t, mustCmd(t, srv, "", "inspect", "orders"),
		`^kind +free \(no lock key\)$`, `^state +free$`, fmt.Sprintf(`^token +%d$`, inner.Token()))
	if j := inspectJSON(t, srv, "orders"); j.Kind != "free" || j.RedisType != "none" || j.TTLms != nil ||
		len(j.Holders) != 0 || j.Token != inner.Token() {
		t.Errorf("-json after release: %+v", j)
	}
	wantLines(t, mustCmd(t, srv, "", "inspect", "never-used"), `^state +free$`, `^token +none drawn yet$`)
}

// A lock released sooner than its WithHoldAtLeast after its acquisition
// shows as released, kept until when and by whose release; list shows it
// kept, with its TTL; release (the operator's force release) ends the keep.
func TestInspectKept(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ls := acquire(t, rlock.New(c, "report", leasehold.WithHoldAtLeast(time.Minute)), ctx)
	if err := ls.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wantLines(t, mustCmd(t, srv, "", "inspect", "report"),
		`^kind +rlock \(reentrant lock\)$`,
		`^state +released, kept by no holder until its hold-at-least is over$`,
		`^kept until +\d\d:\d\d:\d\d\.\d{3}Z \(in (59(\.\d+)?s|1m0(\.\d+)?s)\)$`,
		fmt.Sprintf(`^released by +%s %s$`, regexp.QuoteMeta(ls.Owner()), here()),
		fmt.Sprintf(`^token +%d$`, ls.Token()))
	j := inspectJSON(t, srv, "report")
	if j.Kind != "rlock" || j.TTLms != nil || len(j.Holders) != 0 || j.Kept == nil {
		t.Fatalf("-json: kind %q ttl_ms %v holders %+v kept %+v; want rlock, null, none, kept", j.Kind, j.TTLms, j.Holders, j.Kept)
	}
	at, err1 := time.Parse(time.RFC3339, j.Time)
	until, err2 := time.Parse(time.RFC3339, j.Kept.Until)
	if err1 != nil || err2 != nil || until.Sub(at) != time.Duration(j.Kept.TTLms)*time.Millisecond ||
		j.Kept.TTLms < 58000 || j.Kept.TTLms > 60000 {
		t.Errorf("-json: time %s, kept until %s, ttl_ms %d (%v, %v); want until = time + ttl_ms, about a minute",
			j.Time, j.Kept.Until, j.Kept.TTLms, err1, err2)
	}
	if j.Kept.ReleasedBy != ls.Owner() || j.Kept.Client == nil || j.Kept.Client.Name != name(t) {
		t.Errorf("-json: kept %+v, want released by %s, client %s", j.Kept, ls.Owner(), name(t))
	}
	wantLines(t, mustCmd(t, srv, "", "list", "report"), `^report +rlock +kept +0 +0 +(59(\.\d+)?s|1m0(\.\d+)?s) +\d+ +0 clients$`)
	wantLines(t, mustCmd(t, srv, "", "release", "-yes", "report"), `released`)
	if n, _ := srv.Do("EXISTS", "report").AsInt64(); n != 0 {
		t.Fatal("the operator's release left the kept lock")
	}
}

func TestInspectFair(t *testing.T) {
	srv := redistest.Start(t)
	holder, other := open(t, srv), open(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	held := acquire(t, fairqueue.New(holder, "jobs"), ctx)
	defer held.Release(ctx)
	for i := int64(1); i <= 2; i++ {
		f := fairqueue.New(other, "jobs", leasehold.WithQueueTimeout(5*time.Second)).AcquireAsync(ctx)
		defer f.Cancel()
		eventually(t, 10*time.Second, "waiter queued", func() bool { return queueLen(t, srv, "jobs") == i })
	}
	queue, err := srv.Do("LRANGE", script.KeysOf("jobs").FairQueue, "0", "-1").AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}

	out := mustCmd(t, srv, "", "inspect", "jobs")
	wantLines(t, out,
		`^kind +fair \(fair lock, FIFO\)$`,
		`^state +held by 1 owner$`,
		fmt.Sprintf(`^ +%s +1 +%s$`, regexp.QuoteMeta(held.Owner()), here()),
		`^waiters \(2, oldest first\)$`,
		`^ +# +OWNER +KEEPS ITS PLACE FOR +CLIENT$`,
		fmt.Sprintf(`^ +1 +%s +[0-5](\.\d+)?m?s +%s$`, regexp.QuoteMeta(queue[0]), here()),
		fmt.Sprintf(`^ +2 +%s +[0-5](\.\d+)?m?s +%s$`, regexp.QuoteMeta(queue[1]), here()))
	j := inspectJSON(t, srv, "jobs")
	if j.Kind != "fair" || len(j.Holders) != 1 || j.Holders[0].Owner != held.Owner() || j.Holders[0].Count != 1 {
		t.Errorf("-json: kind %q holders %+v", j.Kind, j.Holders)
	}
	if len(j.Waiters) != 2 {
		t.Fatalf("-json: waiters %+v, want 2", j.Waiters)
	}
	for i, w := range j.Waiters {
		if w.Owner != queue[i] || w.TTLms == nil || *w.TTLms <= 0 || *w.TTLms > 5000 {
			t.Errorf("-json: waiter %d: %s keeps its place %v ms; want %s, 0-5000 ms", i, w.Owner, w.TTLms, queue[i])
		}
	}

	// The holder gone while others wait: no hash, only the queue.
	srv.Do("DEL", "jobs")
	wantLines(t, mustCmd(t, srv, "", "inspect", "jobs"), `^kind +fair`, `^state +free$`, `^waiters \(\d, oldest first\)$`)
}

func TestInspectRW(t *testing.T) {
	srv := redistest.Start(t)
	a, b := open(t, srv), open(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	catalog := rw.New(a, "catalog", leasehold.WithWriterPreference())
	r1 := acquire(t, catalog.Read(), ctx)
	r1again := acquire(t, catalog.Read(), r1.Context())
	r2 := acquire(t, rw.New(b, "catalog").Read(), ctx)
	writer := rw.New(b, "catalog", leasehold.WithWriterPreference()).Write().AcquireAsync(ctx)
	defer writer.Cancel()
	eventually(t, 10*time.Second, "writer announced", func() bool {
		n, _ := srv.Do("ZCARD", script.KeysOf("catalog").Writers).AsInt64()
		return n == 1
	})

	out := mustCmd(t, srv, "", "inspect", "catalog")
	wantLines(t, out,
		`^kind +rw \(read-write lock\)$`,
		`^mode +read$`,
		`^state +held by 2 owners$`,
		`^ +OWNER +AS +HOLDS +HOLD TTLS +CLIENT$`,
		`^waiting writers \(1\), holding new readers back \(writer preference\)$`,
		`^ +OWNER +ANNOUNCED FOR +CLIENT$`,
		`^ +[-0-9a-f]+:\d+:write +\d+(\.\d+)?m?s +`+here()+`$`)
	for _, r := range []struct {
		ls    *lease.Lease
		holds int
	}{{r1, 2}, {r2, 1}} {
		ttls := strings.Repeat(` +\d+(\.\d+)?s`, r.holds)
		wantLines(t, out, fmt.Sprintf(`^ +%s +read +%d%s +%s$`, regexp.QuoteMeta(r.ls.Owner()), r.holds, ttls, here()))
	}
	j := inspectJSON(t, srv, "catalog")
	if j.Kind != "rw" || j.Mode == nil || *j.Mode != "read" || len(j.Holders) != 2 {
		t.Fatalf("-json: kind %q mode %v holders %+v", j.Kind, j.Mode, j.Holders)
	}
	reads := map[string]int{r1.Owner(): 2, r2.Owner(): 1}
	for _, h := range j.Holders {
		if h.Write || h.Count != int64(reads[h.Owner]) || len(h.ReadsTTLms) != reads[h.Owner] {
			t.Errorf("-json: holder %+v, want %d read holds", h, reads[h.Owner])
		}
		for _, ms := range h.ReadsTTLms {
			if ms <= 0 || ms > 30000 {
				t.Errorf("-json: read hold TTL %d ms", ms)
			}
		}
	}
	if len(j.WaitingWriters) != 1 || j.WaitingWriters[0].TTLms == nil {
		t.Errorf("-json: waiting_writers %+v, want one with a TTL", j.WaitingWriters)
	}

	// The readers leave, the writer enters and downgrades.
	r1again.Release(ctx)
	r1.Release(ctx)
	r2.Release(ctx)
	w, err := writer.Result()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Release(ctx)
	down := acquire(t, rw.New(b, "catalog").Read(), w.Context())
	defer down.Release(ctx)
	wantLines(t, mustCmd(t, srv, "", "inspect", "catalog"),
		`^mode +write$`,
		`^state +held by 2 owners$`,
		fmt.Sprintf(`^ +%s +write +1 +- +%s$`, regexp.QuoteMeta(w.Owner()), here()),
		fmt.Sprintf(`^ +%s +read +1 +\d+(\.\d+)?s +%s$`, regexp.QuoteMeta(down.Owner()), here()))
	j = inspectJSON(t, srv, "catalog")
	if j.Mode == nil || *j.Mode != "write" || len(j.Holders) != 2 {
		t.Fatalf("-json: mode %v holders %+v", j.Mode, j.Holders)
	}
	if h := j.Holders[0]; h.Owner != w.Owner() || !h.Write || h.Count != 1 || h.ReadsTTLms != nil {
		t.Errorf("-json: the writer %+v, want its write hold first, with no read TTLs", h)
	}
	if h := j.Holders[1]; h.Owner != down.Owner() || h.Write || len(h.ReadsTTLms) != 1 {
		t.Errorf("-json: the downgraded reader %+v", h)
	}
}

// Redisson's own lock scripts (RedissonLock and RedissonReadLock's
// tryLockInnerAsync), as in rlock's and rw's interop tests: the command must
// read what a Java service wrote.
const (
	redissonLock     = redistest.RedissonLockScript
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
	javaOwner = "3f1c5a7e-0000-4000-8000-00000000java:1"
)

func TestInspectRedisson(t *testing.T) {
	srv := redistest.Start(t)
	java := srv.Client()
	ctx := context.Background()
	for range 2 { // reentrant, as a Java thread takes it twice
		if err := java.Do(ctx, java.B().Eval().Script(redissonLock).Numkeys(1).Key("java-orders").
			Arg("30000", javaOwner).Build()).Error(); err != nil && !rueidis.IsRedisNil(err) {
			t.Fatal(err)
		}
		if err := java.Do(ctx, java.B().Eval().Script(redissonReadLock).Numkeys(2).
			Key("java-catalog", script.KeysOf("java-catalog").ReadHolds(javaOwner)).
			Arg("30000", javaOwner, javaOwner+":write").Build()).Error(); err != nil && !rueidis.IsRedisNil(err) {
			t.Fatal(err)
		}
	}
	srv.Do("HSET", "java-catalog", "ghost:1", "1") // a reader whose hold key is gone
	wantLines(t, mustCmd(t, srv, "", "inspect", "java-orders"),
		`^kind +rlock`, `^token +none drawn yet$`, fmt.Sprintf(`^ +%s +2 +-$`, regexp.QuoteMeta(javaOwner)))
	wantLines(t, mustCmd(t, srv, "", "inspect", "java-catalog"),
		`^kind +rw`, `^mode +read$`, fmt.Sprintf(`^ +%s +read +2 +\d+(\.\d+)?s +\d+(\.\d+)?s +-$`, regexp.QuoteMeta(javaOwner)),
		`^ +ghost:1 +read +1 +expired +-$`)
}

func TestNotALock(t *testing.T) {
	srv := redistest.Start(t)
	srv.Do("SET", "config", "v")
	srv.Do("HSET", "user:1", "name", "ada")
	srv.Do("HSET", "pageviews", "home", "10", "about:us", "3") // numbers, but no owners
	wantLines(t, mustCmd(t, srv, "", "inspect", "config"), `^kind +not a lock \(a Redis string\)$`)
	wantLines(t, mustCmd(t, srv, "", "inspect", "user:1"), `^kind +not a lock \(a Redis hash\)$`)
	wantLines(t, mustCmd(t, srv, "", "inspect", "pageviews"), `^kind +not a lock \(a Redis hash\)$`)
	if j := inspectJSON(t, srv, "config"); j.Kind != "not_a_lock" || j.RedisType != "string" || len(j.Holders) != 0 {
		t.Errorf("-json: %+v", j)
	}
	if j := inspectJSON(t, srv, "pageviews"); j.Kind != "not_a_lock" || j.RedisType != "hash" || len(j.Holders) != 0 {
		t.Errorf("-json: %+v", j)
	}
	wantLines(t, mustCmd(t, srv, "", "list", "*"), `^no locks match "\*"$`)
	for _, key := range []string{"config", "user:1", "pageviews"} {
		if _, err := cmd(t, srv, "", "release", "--yes", key); err == nil || !strings.Contains(err.Error(), "not a lock") {
			t.Fatalf("release of %s: %v, want a refusal", key, err)
		}
	}
	if n, _ := srv.Do("EXISTS", "config", "user:1", "pageviews").AsInt64(); n != 3 {
		t.Fatalf("%d of the three keys left", n)
	}
}

func TestList(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o1 := acquire(t, rlock.New(c, "orders:1"), ctx)
	acquire(t, rlock.New(c, "orders:1"), o1.Context())
	acquire(t, rlock.New(c, "orders:2"), ctx)
	acquire(t, fairqueue.New(c, "jobs"), ctx)
	acquire(t, rw.New(c, "catalog").Read(), ctx)
	// Keys that are not locks, enough of them that SCAN takes many rounds.
	for i := range 300 {
		srv.Do("HSET", "user:"+strconv.Itoa(i), "name", "x")
	}
	srv.Do("SET", "orders:count", "2")
	// A fair lock whose holder is gone while someone waits: only its queue.
	srv.Do("RPUSH", script.KeysOf("printer").FairQueue, "someone:1")

	out := mustCmd(t, srv, "", "list", "-count", "10", "*")
	wantLines(t, out,
		`^NAME +KIND +MODE +HOLDERS +HOLDS +TTL +TOKEN +WAITERS$`,
		`^catalog +rw +read +1 +1 +\d+(\.\d+)?s +\d+ +0 clients$`,
		`^jobs +rlock +- +1 +1 +\d+(\.\d+)?s +\d+ +0 clients$`, // no one waits: laid out as an rlock
		`^orders:1 +rlock +- +1 +2 +\d+(\.\d+)?s +\d+ +0 clients$`,
		`^orders:2 +rlock +- +1 +1 +\d+(\.\d+)?s +\d+ +0 clients$`,
		`^printer +fair +- +0 +0 +- +0 +1$`)
	if n := strings.Count(out, "\n"); n != 6 {
		t.Fatalf("%d lines, want a header and 5 locks:\n%s", n, out)
	}
	out = mustCmd(t, srv, "", "list", "orders:*")
	if !strings.Contains(out, "orders:1") || !strings.Contains(out, "orders:2") || strings.Count(out, "\n") != 3 {
		t.Fatalf("list orders:* printed\n%s", out)
	}
	wantLines(t, mustCmd(t, srv, "", "list", "nothing*"), `^no locks match "nothing\*"$`)

	// The same locks as JSON lines, one object per lock.
	locks := parseJSON(t, mustCmd(t, srv, "", "list", "-json", "-count", "10", "*"))
	type row struct {
		name, kind     string
		holds, waiters int
	}
	var got []row
	for _, l := range locks {
		r := row{l.Name, l.Kind, 0, len(l.Waiters)}
		for _, h := range l.Holders {
			r.holds += int(h.Count)
		}
		got = append(got, r)
	}
	want := []row{{"catalog", "rw", 1, 0}, {"jobs", "rlock", 1, 0}, {"orders:1", "rlock", 2, 0}, {"orders:2", "rlock", 1, 0}, {"printer", "fair", 0, 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("list -json: %v, want %v", got, want)
	}
	if p := locks[4]; p.TTLms != nil || p.Waiters[0].Owner != "someone:1" || p.Waiters[0].TTLms != nil {
		t.Errorf("printer: ttl_ms %v, waiters %+v: want null, someone:1 with no deadline", p.TTLms, p.Waiters)
	}
	if out := mustCmd(t, srv, "", "list", "-json", "nothing*"); out != "" {
		t.Errorf("list -json of no locks printed %q, want nothing", out)
	}

	info, err := srv.Do("INFO", "commandstats").ToString()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(info, "cmdstat_keys:") {
		t.Fatal("list ran KEYS")
	}
}

func TestRelease(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv, leasehold.WithWatchdog(600*time.Millisecond))
	other := open(t, srv, leasehold.WithWatchdog(600*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	held := acquire(t, rlock.New(c, "stuck"), ctx)
	waiter := rlock.New(other, "stuck").AcquireAsync(ctx)
	defer waiter.Cancel()

	// No: nothing changes, and the command fails (exit 1, not a usage
	// error), so that a script that meant to release notices. It exited 0.
	out, err := cmd(t, srv, "n\n", "release", "stuck")
	if err == nil || errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "stuck left as it is") {
		t.Fatalf("release answered n: %v, want an error saying the lock was left", err)
	}
	wantLines(t, out, `^name +stuck$`, fmt.Sprintf(`^ +%s +1 +%s$`, regexp.QuoteMeta(held.Owner()), here()),
		`^Force-release stuck, held by 1 owner\? .*\[y/N\] $`)
	if _, err := cmd(t, srv, "", "release", "stuck"); err == nil || !strings.Contains(err.Error(), "not confirmed") {
		t.Fatalf("no answer (EOF) must mean no, and fail: %v", err)
	}
	if held.Err() != nil {
		t.Fatal(held.Err())
	}

	// Yes: the lock goes, the waiter is woken, the holder hears at once.
	wantLines(t, mustCmd(t, srv, "y\n", "release", "stuck"), `^released stuck \(rlock\); its waiters were woken$`)
	select {
	case <-waiter.Done():
	case <-time.After(2 * time.Second): // well within the 30s lease: woken
		t.Fatal("the waiter was not woken")
	}
	got, err := waiter.Result()
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the holder did not hear of the loss")
	}

	// --yes, after the name: no question asked.
	out = mustCmd(t, srv, "", "release", "stuck", "--yes")
	wantLines(t, out, `^released stuck \(rlock\)`)
	if strings.Contains(out, "[y/N]") {
		t.Fatalf("asked despite --yes:\n%s", out)
	}
	<-got.Lost()
	wantLines(t, mustCmd(t, srv, "", "release", "-y", "stuck"), `^stuck is not held: nothing to release$`)
}

func TestReleaseFairAndRW(t *testing.T) {
	srv := redistest.Start(t)
	c, other := open(t, srv), open(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	acquire(t, fairqueue.New(c, "jobs"), ctx)
	next := fairqueue.New(other, "jobs").AcquireAsync(ctx)
	defer next.Cancel()
	eventually(t, 10*time.Second, "waiter queued", func() bool { return queueLen(t, srv, "jobs") == 1 })
	wantLines(t, mustCmd(t, srv, "", "release", "--yes", "jobs"), `^released jobs \(fair\)`)
	if _, err := next.Result(); err != nil {
		t.Fatalf("the head of the queue: %v", err)
	}

	acquire(t, rw.New(c, "catalog").Read(), ctx)
	writer := rw.New(other, "catalog").Write().AcquireAsync(ctx)
	defer writer.Cancel()
	wantLines(t, mustCmd(t, srv, "", "release", "--yes", "catalog"), `^released catalog \(rw\)`)
	if _, err := writer.Result(); err != nil {
		t.Fatalf("the waiting writer: %v", err)
	}
}

// syncBuffer is a bytes.Buffer that watch can write while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// watchThrough runs watch, with flags, on a lock while it is free, then
// held, then released, and returns what watch printed and the lease it was
// held with. snapshots counts the snapshots in what watch printed so far:
// there must be one per state, however many looks it takes.
func watchThrough(t *testing.T, flags []string, snapshots func(out string) int) (string, *lease.Lease) {
	t.Helper()
	srv := redistest.Start(t)
	c := open(t, srv)
	var out syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		args := append(append([]string{"-addr", srv.Addr(), "watch", "-interval", "20ms"}, flags...), "report")
		done <- run(ctx, args, strings.NewReader(""), &out)
	}()
	n := func() int { return snapshots(out.String()) }
	eventually(t, 10*time.Second, "the first snapshot", func() bool { return n() == 1 })

	l := acquire(t, rlock.New(c, "report"), ctx)
	eventually(t, 10*time.Second, "a snapshot of the held lock", func() bool { return n() == 2 })
	time.Sleep(100 * time.Millisecond) // five looks at an unchanged state (its TTL runs down)
	if got := n(); got != 2 {
		t.Fatalf("%d snapshots of two states:\n%s", got, out.String())
	}
	l.Release(ctx)
	eventually(t, 10*time.Second, "a snapshot of the released lock", func() bool { return n() == 3 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("watch ended with %v", err)
	}
	return out.String(), l
}

func TestWatch(t *testing.T) {
	out, _ := watchThrough(t, nil, func(out string) int { return strings.Count(out, "--- ") })
	parts := strings.Split(out, "--- ")
	wantLines(t, parts[1], `^state +free$`, `^token +none drawn yet$`)
	wantLines(t, parts[2], `^state +held by 1 owner$`, `^ttl +\d`, `^token +\d+$`)
	wantLines(t, parts[3], `^state +free$`, `^token +\d+$`)
}

func TestAuth(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	acquire(t, rlock.New(c, "guarded"), context.Background())
	if err := srv.Do("CONFIG", "SET", "requirepass", "s3cret").Error(); err != nil {
		t.Fatal(err)
	}
	if _, err := cmd(t, srv, "", "inspect", "guarded"); err == nil {
		t.Fatal("inspect without the password succeeded")
	}
	if _, err := cmd(t, srv, "", "-password", "wrong", "inspect", "guarded"); err == nil {
		t.Fatal("inspect with a wrong password succeeded")
	}
	wantLines(t, mustCmd(t, srv, "", "inspect", "-password", "s3cret", "guarded"), `^state +held by 1 owner$`)
	t.Setenv("REDIS_PASSWORD", "s3cret")
	wantLines(t, mustCmd(t, srv, "", "inspect", "guarded"), `^state +held by 1 owner$`)
}

func TestAddrFromEnv(t *testing.T) {
	srv := redistest.Start(t)
	t.Setenv("REDIS_ADDR", srv.Addr())
	var out bytes.Buffer
	if err := run(context.Background(), []string{"inspect", "x"}, strings.NewReader(""), &out); err != nil {
		t.Fatal(err)
	}
	wantLines(t, out.String(), `^name +x$`)
}

func TestTLS(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := writeCerts(t, dir)
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t, "--tls-port", strconv.Itoa(port),
		"--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", ca, "--tls-auth-clients", "no")
	tlsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c := open(t, srv)
	acquire(t, rlock.New(c, "over-tls"), context.Background())

	inspect := func(flags ...string) (string, error) {
		var out bytes.Buffer
		args := append(append([]string{"-addr", tlsAddr}, flags...), "inspect", "over-tls")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := run(ctx, args, strings.NewReader(""), &out)
		return out.String(), err
	}
	out, err := inspect("-tls-ca", ca)
	if err != nil {
		t.Fatalf("inspect over TLS: %v", err)
	}
	wantLines(t, out, `^state +held by 1 owner$`)
	if _, err := inspect("-tls"); err == nil { // the system roots do not know our CA
		t.Fatal("TLS without the CA verified the server")
	}
	if _, err := inspect("-tls", "-tls-insecure"); err != nil {
		t.Fatalf("-tls-insecure: %v", err)
	}
}

// writeCerts writes a CA and a server certificate for 127.0.0.1 signed by
// it, PEM, into dir.
func writeCerts(t *testing.T, dir string) (ca, cert, key string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "leasehold test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caTmpl, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("server.pem", "CERTIFICATE", srvDER), write("server.key", "EC PRIVATE KEY", keyDER)
}

func TestUsage(t *testing.T) {
	srv := redistest.Start(t)
	for _, args := range [][]string{
		{},
		{"frobnicate", "x"},
		{"inspect"},
		{"inspect", "a", "b"},
		{"watch", "-interval", "0s", "x"},
		{"list", "-count", "0", "*"},
		{"inspect", "-no-such-flag", "x"},
	} {
		_, err := cmd(t, srv, "", args...)
		if !errors.As(err, new(usageError)) {
			t.Errorf("leasehold %q: %v, want a usage error", args, err)
		}
	}
	if _, err := cmd(t, srv, "", "inspect", "-h"); err != nil {
		t.Errorf("-h: %v", err)
	}
}

// jsonLock is what -json prints for a lock, decoded by the field names
// scripts rely on.
type jsonLock struct {
	Name      string  `json:"name"`
	Kind      string  `json:"kind"`
	RedisType string  `json:"redis_type"`
	Mode      *string `json:"mode"`
	TTLms     *int64  `json:"ttl_ms"`
	// WaitingClients: an rlock's, election's or rw's Clients waiting.
	WaitingClients *int64 `json:"waiting_clients"`
	Token          uint64 `json:"token"`
	Holders        []struct {
		Owner      string      `json:"owner"`
		Count      int64       `json:"count"`
		Write      bool        `json:"write"`
		ReadsTTLms []int64     `json:"reads_ttl_ms"`
		Client     *jsonClient `json:"client"`
	} `json:"holders"`
	Waiters        []jsonWaiter `json:"waiters"`
	WaitingWriters []jsonWaiter `json:"waiting_writers"`
	Time           string       `json:"time"`
	Semaphore      *struct {
		Total     *int64 `json:"total"`
		Available *int64 `json:"available"`
		Holders   int    `json:"holders"`
		Permits   []struct {
			ID     string      `json:"id"`
			TTLms  int64       `json:"ttl_ms"`
			Client *jsonClient `json:"client"`
		} `json:"permits"`
		Claims []jsonWaiter `json:"claims"`
	} `json:"semaphore"`
	Leader *struct {
		Value string `json:"value"`
		Term  uint64 `json:"term"`
		Owner string `json:"owner"`
	} `json:"leader"`
	Kept *struct {
		ReleasedBy string      `json:"released_by"`
		Until      string      `json:"until"`
		TTLms      int64       `json:"ttl_ms"`
		Client     *jsonClient `json:"client"`
	} `json:"kept"`
	Value *int64 `json:"value"`
	Fence *struct {
		Resource string `json:"resource"`
		Token    uint64 `json:"token"`
		TTLms    int64  `json:"ttl_ms"`
	} `json:"fence"`
	PrefixHint *struct {
		Found []struct {
			Key    string `json:"key"`
			Prefix string `json:"prefix"`
			Kind   string `json:"kind"`
		} `json:"found"`
		Complete bool `json:"complete"`
	} `json:"prefix_hint"`
}

type jsonClient struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
}

type jsonWaiter struct {
	Owner  string      `json:"owner"`
	TTLms  *int64      `json:"ttl_ms"`
	Client *jsonClient `json:"client"`
}

// jsonKeys are the fields every lock object has, null or not.
var jsonKeys = []string{"name", "kind", "redis_type", "mode", "ttl_ms", "token", "holders", "waiters", "waiting_writers", "waiting_clients", "time", "semaphore", "leader", "kept", "value", "fence", "prefix_hint"}

// parseJSON decodes out, one JSON object a line, checking that each has
// every field and no other.
func parseJSON(t *testing.T, out string) []jsonLock {
	t.Helper()
	var locks []jsonLock
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &fields); err != nil {
			t.Fatalf("not a JSON object: %v\n%s", err, line)
		}
		for _, k := range jsonKeys {
			if _, ok := fields[k]; !ok {
				t.Errorf("no field %q in %s", k, line)
			}
		}
		if len(fields) != len(jsonKeys) {
			t.Errorf("%d fields, want %d: %s", len(fields), len(jsonKeys), line)
		}
		var l jsonLock
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("%v\n%s", err, line)
		}
		if _, err := time.Parse(time.RFC3339, l.Time); err != nil {
			t.Errorf("time %q: %v", l.Time, err)
		}
		locks = append(locks, l)
	}
	return locks
}

// inspectJSON runs inspect -json NAME and decodes its one object.
func inspectJSON(t *testing.T, srv *redistest.Server, name string) jsonLock {
	t.Helper()
	out := mustCmd(t, srv, "", "inspect", "-json", name)
	if strings.Count(out, "\n") != 1 {
		t.Fatalf("inspect -json printed %d lines, want one object on one line:\n%s", strings.Count(out, "\n"), out)
	}
	return parseJSON(t, out)[0]
}

// TestJSONFlag: -o json is -json; -o text is the text; another format is
// a usage error.
func TestJSONFlag(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	acquire(t, rlock.New(c, "flagged"), context.Background())
	a := parseJSON(t, mustCmd(t, srv, "", "inspect", "-o", "json", "flagged"))
	b := parseJSON(t, mustCmd(t, srv, "", "inspect", "flagged", "-json"))
	if len(a) != 1 || len(b) != 1 || a[0].Holders[0].Owner != b[0].Holders[0].Owner {
		t.Errorf("-o json %+v, -json %+v", a, b)
	}
	wantLines(t, mustCmd(t, srv, "", "inspect", "-o", "text", "flagged"), `^name +flagged$`)
	if _, err := cmd(t, srv, "", "inspect", "-o", "yaml", "flagged"); !errors.As(err, new(usageError)) {
		t.Errorf("-o yaml: %v, want a usage error", err)
	}
}

// TestWatchJSON: watch -json prints a line of JSON for each state, and
// none for the TTL running down.
func TestWatchJSON(t *testing.T) {
	out, l := watchThrough(t, []string{"-json"}, func(out string) int { return strings.Count(out, "\n") })
	states := parseJSON(t, out)
	if states[0].Kind != "free" || states[0].Token != 0 {
		t.Errorf("first: %+v", states[0])
	}
	if states[1].Kind != "rlock" || len(states[1].Holders) != 1 || states[1].Holders[0].Owner != l.Owner() || states[1].Token != l.Token() {
		t.Errorf("held: %+v", states[1])
	}
	if states[2].Kind != "free" || len(states[2].Holders) != 0 || states[2].Token != l.Token() {
		t.Errorf("released: %+v", states[2])
	}
	if !(states[0].Time <= states[1].Time && states[1].Time <= states[2].Time) {
		t.Errorf("times out of order: %s %s %s", states[0].Time, states[1].Time, states[2].Time)
	}
}

// help, -h and --help print the usage once, on stdout, and succeed; help
// COMMAND prints the command's flags. help was an unknown command, and a
// mistake printed the usage and then the error (the flag package's error
// twice): now a mistake prints nothing, and main one line and a pointer to
// help.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"help", "version"}} {
		var out bytes.Buffer
		if err := run(context.Background(), args, strings.NewReader(""), &out); err != nil {
			t.Errorf("leasehold %q: %v", args, err)
		}
		if got := out.String(); got != usage {
			t.Errorf("leasehold %q printed %q, want the usage once", args, got)
		}
	}
	for _, args := range [][]string{{"help", "inspect"}, {"inspect", "-h"}, {"-addr", "127.0.0.1:1", "inspect", "--help"}} {
		var out bytes.Buffer
		if err := run(context.Background(), args, strings.NewReader(""), &out); err != nil {
			t.Errorf("leasehold %q: %v", args, err)
		}
		wantLines(t, out.String(), `^usage: leasehold inspect \[flags\] NAME$`, `^flags:$`, `^  -json$`)
	}
	for _, args := range [][]string{{"help", "frob"}, {"frob", "x"}, {"-nope", "inspect", "x"}, {"inspect", "-nope", "x"}, {"help", "a", "b"}} {
		var out bytes.Buffer
		err := run(context.Background(), args, strings.NewReader(""), &out)
		if !errors.As(err, new(usageError)) {
			t.Errorf("leasehold %q: %v, want a usage error", args, err)
		}
		if out.Len() != 0 {
			t.Errorf("leasehold %q printed %q before its error %q", args, out.String(), err)
		}
	}
}

// -json (and -o json) may come before the command, as the connection flags
// may: it failed with "flag provided but not defined: -json". A command that
// prints no JSON says so.
func TestJSONBeforeCommand(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	l := acquire(t, rlock.New(c, "early"), context.Background())
	for _, args := range [][]string{{"-json", "inspect", "early"}, {"-o", "json", "inspect", "early"}, {"-json", "list"}} {
		locks := parseJSON(t, mustCmd(t, srv, "", args...))
		if len(locks) != 1 || locks[0].Name != "early" || locks[0].Holders[0].Owner != l.Owner() {
			t.Errorf("leasehold %q: %+v", args, locks)
		}
	}
	wantLines(t, mustCmd(t, srv, "", "-json", "-o", "text", "inspect", "early"), `^name +early$`)
	_, err := cmd(t, srv, "", "-json", "release", "--yes", "early")
	if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "-json goes with inspect, list, watch and group") {
		t.Errorf("-json release: %v, want a usage error naming the commands that print JSON", err)
	}
	if l.Err() != nil {
		t.Fatalf("the refused release released: %v", l.Err())
	}
}

// list with no pattern lists every lock, as list '*': it was a usage error.
func TestListAll(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := context.Background()
	acquire(t, rlock.New(c, "a:1"), ctx)
	acquire(t, rlock.New(c, "b:2"), ctx)
	all := mustCmd(t, srv, "", "list")
	wantLines(t, all, `^NAME +KIND`, `^a:1 +rlock `, `^b:2 +rlock `)
	// The TTL runs down between the two, and the columns' width with it:
	// compare the fields, the TTL left out.
	ttl := regexp.MustCompile(`^\d+(\.\d+)?m?s$`)
	fields := func(out string) string {
		var b strings.Builder
		for line := range strings.Lines(out) {
			for _, f := range strings.Fields(line) {
				if !ttl.MatchString(f) {
					b.WriteString(f + " ")
				}
			}
			b.WriteString("\n")
		}
		return b.String()
	}
	if star := mustCmd(t, srv, "", "list", "*"); fields(star) != fields(all) {
		t.Errorf("list:\n%s\nlist '*':\n%s", all, star)
	}
	if _, err := cmd(t, srv, "", "list", "a*", "b*"); !errors.As(err, new(usageError)) {
		t.Errorf("list of two patterns: %v, want a usage error", err)
	}
}

// inspect shows each holder's connection, name and address, from CLIENT
// LIST: Open names a Client's connections NAME/ID (WithClientName), ID the
// start of its owner fields. Owners were bare UUIDs, which told an operator
// nothing of which host held a lock. A Client made by New over a client
// named otherwise shows none; so does every holder when CLIENT LIST is
// refused.
func TestHolderConnection(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	billing := open(t, srv, leasehold.WithClientName("billing-7"))
	held := acquire(t, rlock.New(billing, "invoices"), ctx)
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, ClientName: "theirs"})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	theirs, err := leasehold.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	defer theirs.Close()
	other := acquire(t, rlock.New(theirs, "reports"), ctx)

	// billing's address, as the server sees it.
	list, err := srv.Do("CLIENT", "LIST").ToString()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`addr=(\S+) .*name=billing-7/` + regexp.QuoteMeta(billing.ID()) + ` `).FindStringSubmatch(list)
	if m == nil {
		t.Fatalf("no connection named billing-7/%s in:\n%s", billing.ID(), list)
	}
	addr := m[1]

	wantLines(t, mustCmd(t, srv, "", "inspect", "invoices"),
		`^ +OWNER +HOLDS +CLIENT$`,
		fmt.Sprintf(`^ +%s +1 +billing-7 at %s$`, regexp.QuoteMeta(held.Owner()), regexp.QuoteMeta(addr)))
	j := inspectJSON(t, srv, "invoices")
	if c := j.Holders[0].Client; c == nil || c.Name != "billing-7" || c.Addr != addr {
		t.Errorf("-json: client %+v, want billing-7 at %s", c, addr)
	}
	for _, l := range parseJSON(t, mustCmd(t, srv, "", "list", "-json")) {
		if c := l.Holders[0].Client; (l.Name == "invoices") != (c != nil) {
			t.Errorf("list -json: %s held by %s: client %+v", l.Name, l.Holders[0].Owner, c)
		}
	}
	wantLines(t, mustCmd(t, srv, "", "inspect", "reports"), fmt.Sprintf(`^ +%s +1 +-$`, regexp.QuoteMeta(other.Owner())))
	if c := inspectJSON(t, srv, "reports").Holders[0].Client; c != nil {
		t.Errorf("-json of a Client made by New: client %+v, want null", c)
	}

	// A user whose ACL refuses CLIENT LIST still inspects; no connections.
	// Redis 6 cannot take one subcommand away (-client|list is Redis 7's):
	// there the user is refused CLIENT whole.
	deny := "-client|list"
	if name, major := redistest.Version(); name == "redis" && major < 7 {
		deny = "-client"
	}
	if err := srv.Do("ACL", "SETUSER", "ops", "on", ">pw", "~*", "&*", "+@all", deny).Error(); err != nil {
		t.Fatal(err)
	}
	wantLines(t, mustCmd(t, srv, "", "-user", "ops", "-password", "pw", "inspect", "invoices"),
		fmt.Sprintf(`^ +%s +1 +-$`, regexp.QuoteMeta(held.Owner())))
}
