package fence_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/fence"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
)

func ctxFor(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// get reads key, "" when absent.
func get(t *testing.T, rc rueidis.Client, key string) string {
	t.Helper()
	v, err := rc.Do(context.Background(), rc.B().Get().Key(key).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func pttl(t *testing.T, rc rueidis.Client, key string) int64 {
	t.Helper()
	n, err := rc.Do(context.Background(), rc.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A token equal to the last is applied (one holder writes several times), a
// higher one too, a lower one is refused: the error wraps ErrStale, names the
// key and both tokens, and the key and its record are as they were.
func TestRedisSet(t *testing.T) {
	rc := redistest.Start(t).Client()
	ctx := ctxFor(t)
	r := fence.NewRedis(rc)
	steps := []struct {
		token     uint64
		value     string
		wantStale bool
		want      string // the value after
		last      string // the token applied after
	}{
		{100, "a", false, "a", "100"},
		{100, "b", false, "b", "100"},
		{99, "c", true, "b", "100"},
		{101, "d", false, "d", "101"},
		{1, "e", true, "d", "101"},
		{100, "f", true, "d", "101"},
	}
	for _, s := range steps {
		err := r.Set(ctx, "balance", s.value, s.token)
		if got := errors.Is(err, fence.ErrStale); got != s.wantStale {
			t.Fatalf("Set(%d): %v, want stale %v", s.token, err, s.wantStale)
		}
		if s.wantStale {
			msg := err.Error()
			for _, part := range []string{`"balance"`, strconv.FormatUint(s.token, 10) + ":", s.last + " applied"} {
				if !strings.Contains(msg, part) {
					t.Errorf("Set(%d): %q does not name %s", s.token, msg, part)
				}
			}
			var fe *fence.Error
			if !errors.As(err, &fe) || fe.Resource != "balance" || fe.Op != "set" {
				t.Errorf("Set(%d): %#v, want a *fence.Error for set on balance", s.token, err)
			}
		}
		if got := get(t, rc, "balance"); got != s.want {
			t.Fatalf("after Set(%d): balance %q, want %q", s.token, got, s.want)
		}
		if got := get(t, rc, fence.RecordKey("balance")); got != s.last {
			t.Fatalf("after Set(%d): record %q, want %s", s.token, got, s.last)
		}
	}
}

// Tokens above 2^53 compare exactly: Lua's numbers (doubles) would take
// 2^53+1 and 2^53 for equal.
func TestRedisLargeTokens(t *testing.T) {
	rc := redistest.Start(t).Client()
	ctx := ctxFor(t)
	r := fence.NewRedis(rc)
	const big = 1<<53 + 1
	if err := r.Set(ctx, "k", "a", big); err != nil {
		t.Fatal(err)
	}
	if err := r.Set(ctx, "k", "b", big-1); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("Set(2^53): %v, want ErrStale", err)
	}
	if err := r.Set(ctx, "k", "c", math.MaxInt64); err != nil {
		t.Fatalf("Set(2^63-1): %v", err)
	}
	if err := r.Set(ctx, "k", "d", math.MaxInt64-1); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("Set(2^63-2): %v, want ErrStale", err)
	}
	if got := get(t, rc, "k"); got != "c" {
		t.Errorf("k = %q, want c", got)
	}
}

// Do runs any one-key write and returns its reply.
func TestRedisDo(t *testing.T) {
	rc := redistest.Start(t).Client()
	ctx := ctxFor(t)
	r := fence.NewRedis(rc)
	reply, err := r.Do(ctx, "stock", 7, "INCRBY", "5")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := reply.AsInt64(); err != nil || n != 5 {
		t.Fatalf("INCRBY replied %v, %v; want 5", n, err)
	}
	reply, err = r.Do(ctx, "h", 7, "HSET", "f", "v", "g", "w")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := reply.AsInt64(); err != nil || n != 2 {
		t.Fatalf("HSET replied %v, %v; want 2", n, err)
	}
	reply, err = r.Do(ctx, "stock", 8, "SET", "x", "PX", "60000", "GET")
	if err != nil {
		t.Fatal(err)
	}
	if s, err := reply.ToString(); err != nil || s != "5" {
		t.Fatalf("SET GET replied %q, %v; want 5", s, err)
	}
	if _, err := r.Do(ctx, "stock", 7, "DEL"); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("DEL with token 7 after 8: %v, want ErrStale", err)
	}
	if got := get(t, rc, "stock"); got != "x" {
		t.Errorf("stock = %q, want x", got)
	}
}

// The record expires no sooner than the key: with it when the key has an
// expiry, never when the key has none or a fenced write deleted it (a late
// write must still meet it).
func TestRedisRecordExpiry(t *testing.T) {
	rc := redistest.Start(t).Client()
	ctx := ctxFor(t)
	r := fence.NewRedis(rc)
	rec := fence.RecordKey("k")

	if _, err := r.Do(ctx, "k", 5, "SET", "v", "PX", "60000"); err != nil {
		t.Fatal(err)
	}
	// The record first: read later, the key's PTTL can only be lower.
	record := pttl(t, rc, rec)
	key := pttl(t, rc, "k")
	if key <= 0 || record < key || record > 60000 {
		t.Errorf("key PTTL %d, record PTTL %d: want the record to expire with the key", key, record)
	}
	if _, err := r.Do(ctx, "k", 5, "PERSIST"); err != nil {
		t.Fatal(err)
	}
	if got := pttl(t, rc, rec); got != -1 {
		t.Errorf("record PTTL %d after PERSIST of the key, want -1 (none)", got)
	}
	if _, err := r.Do(ctx, "k", 6, "DEL"); err != nil {
		t.Fatal(err)
	}
	if got := pttl(t, rc, rec); got != -1 {
		t.Errorf("record PTTL %d after DEL of the key, want -1 (kept)", got)
	}
	if err := r.Set(ctx, "k", "late", 5); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("late Set after a fenced DEL: %v, want ErrStale", err)
	}
	if got := get(t, rc, "k"); got != "" {
		t.Errorf("k = %q after the refused late Set, want absent", got)
	}
}

// A refused or failed write changes nothing: not the key, not the record, not
// their expiries.
func TestRedisRefusalWritesNothing(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client()
	ctx := ctxFor(t)
	r := fence.NewRedis(rc)
	rec := fence.RecordKey("h")
	if _, err := r.Do(ctx, "h", 10, "HSET", "f", "v"); err != nil {
		t.Fatal(err)
	}
	if err := rc.Do(ctx, rc.B().Pexpire().Key("h").Milliseconds(60000).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	snapshot := func() string {
		var b strings.Builder
		for _, k := range []string{"h", rec} {
			d, _ := rc.Do(ctx, rc.B().Dump().Key(k).Build()).ToString()
			b.WriteString(k + "=" + d + ";")
		}
		return b.String()
	}
	before := snapshot()
	if _, err := r.Do(ctx, "h", 9, "HSET", "f", "stale"); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("stale HSET: %v, want ErrStale", err)
	}
	// Redis rejects the command (a hash is not a counter): the record must
	// not take token 11.
	_, err := r.Do(ctx, "h", 11, "INCRBY", "1")
	if err == nil || errors.Is(err, fence.ErrStale) || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("INCRBY of a hash: %v, want Redis' WRONGTYPE", err)
	}
	if after := snapshot(); after != before {
		t.Errorf("a refused write changed Redis:\nbefore %q\nafter  %q", before, after)
	}
	if got := get(t, rc, rec); got != "10" {
		t.Errorf("record %q, want 10", got)
	}
	// A record that is not a token fails the write before it is made.
	if err := rc.Do(ctx, rc.B().Set().Key(fence.RecordKey("x")).Value("junk").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	want := `fence: set "x": the token record "leasehold_fence:{x}" holds "junk", not a token; nothing written`
	if err := r.Set(ctx, "x", "v", 1); err == nil || err.Error() != want {
		t.Fatalf("Set over a junk record: %v, want %s", err, want)
	}
	if got := get(t, rc, "x"); got != "" {
		t.Errorf("x = %q after the failed Set, want absent", got)
	}
}

// scriptInternals is what Redis puts in the error of a script that a
// command in it failed: Redis 7 appends "script: SHA, on @user_script:LINE.",
// Redis 6.2 puts "@user_script: LINE:" first. A fenced write's error names
// none of it: the caller wrote no script.
var scriptInternals = regexp.MustCompile(`[0-9a-f]{40}|@user_script`)

// A command Redis rejects fails in Redis' words, naming the command, without
// the script's SHA and line (issue 49: "Unknown Redis command called from
// script script: 3e16...2875, on @user_script:27"). The error wraps
// lease.ErrRedis, not ErrStale, and nothing is written, the record neither.
func TestRedisRefusedCommand(t *testing.T) {
	rc := redistest.Start(t).Client()
	ctx := ctxFor(t)
	r := fence.NewRedis(rc)
	if err := rc.Do(ctx, rc.B().Hset().Key("h").FieldValue().FieldValue("f", "v").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key, cmd string
		args     []string
		want     string // a regexp of the whole message
	}{
		{"k", "FOO", nil, `fence: do "k": Redis refused FOO: unknown command`},
		{"k", "set", nil, `fence: do "k": Redis refused SET: wrong number of arguments`},
		{"k", "SUBSCRIBE", nil, `fence: do "k": Redis refused SUBSCRIBE: not allowed in a script, and a fenced write runs as one`},
		{"k", "SE T", []string{"v"}, `fence: do "k": Redis refused "SE T": unknown command`},
		{"h", "INCRBY", []string{"1"}, `fence: do "h": Redis refused INCRBY: WRONGTYPE Operation against a key holding the wrong kind of value`},
		// Redis' own reason, worded apart by its versions.
		{"k", "SET", []string{"v", "EX", "0"}, `fence: do "k": Redis refused SET: invalid expire time in '?set'?( command)?`},
	}
	for _, tt := range tests {
		_, err := r.Do(ctx, tt.key, 5, tt.cmd, tt.args...)
		if err == nil {
			t.Fatalf("%s %v: applied, want it refused", tt.cmd, tt.args)
		}
		if !regexp.MustCompile(`^` + tt.want + `$`).MatchString(err.Error()) {
			t.Errorf("%s %v:\n%s\nwant\n%s", tt.cmd, tt.args, err, tt.want)
		}
		if m := scriptInternals.FindString(err.Error()); m != "" {
			t.Errorf("%s %v: %q names the script's internals (%q)", tt.cmd, tt.args, err, m)
		}
		var fe *fence.Error
		if !errors.Is(err, lease.ErrRedis) || errors.Is(err, fence.ErrStale) || !errors.As(err, &fe) || fe.Op != "do" || fe.Resource != tt.key {
			t.Errorf("%s %v: %#v, want a *fence.Error of do on %s wrapping lease.ErrRedis", tt.cmd, tt.args, err, tt.key)
		}
	}
	if got := get(t, rc, "k"); got != "" {
		t.Errorf("k = %q, want absent", got)
	}
	for _, key := range []string{"k", "h"} {
		if got := get(t, rc, fence.RecordKey(key)); got != "" {
			t.Errorf("%s's record %q after refused writes only, want absent", key, got)
		}
	}
}

// A record Redis cannot read (of another type) fails the write before it is
// made, naming the record, in Redis' words.
func TestRedisRecordOfWrongType(t *testing.T) {
	rc := redistest.Start(t).Client()
	ctx := ctxFor(t)
	r := fence.NewRedis(rc)
	rec := fence.RecordKey("x")
	if err := rc.Do(ctx, rc.B().Hset().Key(rec).FieldValue().FieldValue("f", "v").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	err := r.Set(ctx, "x", "v", 1)
	want := `fence: set "x": Redis refused GET of the token record "leasehold_fence:{x}": ` +
		`WRONGTYPE Operation against a key holding the wrong kind of value; nothing written`
	if err == nil || err.Error() != want || !errors.Is(err, lease.ErrRedis) {
		t.Fatalf("Set over a hash record: %v\nwant %s, wrapping lease.ErrRedis", err, want)
	}
	if got := get(t, rc, "x"); got != "" {
		t.Errorf("x = %q, want absent", got)
	}
}

// What an ACL refuses is said in Redis' words, with what it leaves behind: a
// user who may not touch the record has the script refused (naming the
// record, which the user never named), nothing written; a user who may not
// run PTTL has the write applied and fenced, and is told its record keeps no
// expiry.
func TestRedisACLRefusals(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client()
	ctx := ctxFor(t)
	client := func(user string, rules ...string) *fence.Redis {
		args := append([]string{"ACL", "SETUSER", user, "on", "nopass", "&*"}, rules...)
		if err := srv.Do(args...).Error(); err != nil {
			t.Fatal(err)
		}
		o := srv.Option()
		o.Username, o.DisableCache = user, true
		rc, err := rueidis.NewClient(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(rc.Close)
		return fence.NewRedis(rc)
	}

	err := client("norecord", "~k*", "+@all").Set(ctx, "k", "v", 7)
	want := `fence: set "k": Redis refused EVALSHA of the fenced write, on "k" and its token record "leasehold_fence:{k}": NOPERM `
	var re *rueidis.RedisError
	if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, lease.ErrRedis) || !errors.As(err, &re) {
		t.Fatalf("Set without access to the record: %v\nwant %s..., wrapping lease.ErrRedis and Redis' reply", err, want)
	}
	if got := get(t, admin, "k"); got != "" {
		t.Errorf("k = %q, want absent", got)
	}

	err = client("nopttl", "~*", "+@all", "-pttl").Set(ctx, "k", "v", 7)
	want = `fence: set "k": SET applied and its token recorded, but Redis refused PTTL of "k": .+; the record keeps no expiry`
	if err == nil || !regexp.MustCompile(`^`+want+`$`).MatchString(err.Error()) || !errors.Is(err, lease.ErrRedis) {
		t.Fatalf("Set without PTTL: %v\nwant %s, wrapping lease.ErrRedis", err, want)
	}
	if m := scriptInternals.FindString(err.Error()); m != "" {
		t.Errorf("%q names the script's internals (%q)", err, m)
	}
	if got, rec := get(t, admin, "k"), get(t, admin, fence.RecordKey("k")); got != "v" || rec != "7" {
		t.Fatalf("k = %q, record %q; want v and 7, as the error says", got, rec)
	}
	if err := fence.NewRedis(admin).Set(ctx, "k", "late", 6); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("a late write after it: %v, want ErrStale", err)
	}
}

// Bad input fails before Redis is asked, wrapping lease.ErrInvalid.
func TestRedisInvalid(t *testing.T) {
	rc := redistest.Start(t).Client()
	ctx := ctxFor(t)
	r := fence.NewRedis(rc)
	tests := []struct {
		name string
		err  error
	}{
		{"nil client", fence.NewRedis(nil).Set(ctx, "k", "v", 1)},
		{"empty key", r.Set(ctx, "", "v", 1)},
		{"token 0", r.Set(ctx, "k", "v", 0)},
		{"token 2^63", r.Set(ctx, "k", "v", math.MaxInt64+1)},
		{"empty command", func() error { _, err := r.Do(ctx, "k", 1, ""); return err }()},
	}
	for _, tt := range tests {
		if !errors.Is(tt.err, lease.ErrInvalid) {
			t.Errorf("%s: %v, want lease.ErrInvalid", tt.name, tt.err)
		}
	}
	if got := get(t, rc, "k"); got != "" {
		t.Errorf("k = %q, want absent", got)
	}
}

// Writers racing on one key with tokens out of order: every write the
// fence applied carried a token no lower than any applied before it (the
// list they append to never goes down), and every refusal was of a token
// below one applied.
func TestRedisConcurrentWriters(t *testing.T) {
	rc := redistest.Start(t).Client()
	ctx := ctxFor(t)
	r := fence.NewRedis(rc)
	const writers, each = 8, 50
	var wg sync.WaitGroup
	var mu sync.Mutex
	refused := 0
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range each {
				// Rising on the whole, each writer's in a window that
				// overlaps the others'.
				tok := uint64(1+i*4) + rnd.Uint64N(16)
				_, err := r.Do(ctx, "log", tok, "RPUSH", strconv.FormatUint(tok, 10))
				switch {
				case errors.Is(err, fence.ErrStale):
					mu.Lock()
					refused++
					mu.Unlock()
				case err != nil:
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	applied, err := rc.Do(ctx, rc.B().Lrange().Key("log").Start(0).Stop(-1).Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	if len(applied)+refused != writers*each {
		t.Fatalf("%d applied + %d refused, want %d writes", len(applied), refused, writers*each)
	}
	prev := uint64(0)
	for i, s := range applied {
		tok, _ := strconv.ParseUint(s, 10, 64)
		if tok < prev {
			t.Fatalf("write %d applied token %d after %d", i, tok, prev)
		}
		prev = tok
	}
	if refused == 0 {
		t.Errorf("no write refused: the test raced nothing")
	}
	t.Logf("%d applied, %d refused", len(applied), refused)
}

// In Redis Cluster the record is in the key's slot: a fenced write to a key
// with a hash tag, without, and with braces that make none runs (a record
// elsewhere would be CROSSSLOT; rueidis panics on it).
func TestRedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: no Redis Cluster")
	}
	cl := redistest.StartCluster(t, 3)
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{cl.Nodes[0].Addr()}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	ctx := ctxFor(t)
	r := fence.NewRedis(rc)
	for _, key := range []string{"balance", "{acct:1}:balance", "a{b}c", "x{}y", "a}b", "a{b"} {
		if err := r.Set(ctx, key, "v", 5); err != nil {
			t.Errorf("Set(%q): %v", key, err)
		}
		if err := r.Set(ctx, key, "w", 4); !errors.Is(err, fence.ErrStale) {
			t.Errorf("stale Set(%q): %v, want ErrStale", key, err)
		}
	}
}
