package lua

import (
	"context"
	"encoding/hex"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/script"
)

// run runs call on c as exec does, for tests of renewals.
func run(ctx context.Context, c rueidis.Client, call *Call) rueidis.RedisResult {
	return call.script.exec(ctx, c, call.Keys, call.Args)
}

// Every script of package script is run by some kind: one left out would
// be a script nobody runs, or a kind that forgot to load it.
func TestEveryScriptLoaded(t *testing.T) {
	for _, s := range script.All() {
		ls, ok := loaded[s.Name]
		if !ok {
			t.Errorf("%s is not loaded", s.Name)
			continue
		}
		if ls.plain.src != s.Source {
			t.Errorf("%s: loaded form differs from package script's", s.Name)
		}
	}
	if len(loaded) != len(script.All()) {
		t.Errorf("%d scripts loaded, package script has %d", len(loaded), len(script.All()))
	}
}

// A script's sharded form publishes with SPUBLISH wherever it published,
// counts sharded subscribers wherever it counted subscribers, and is
// otherwise the same; one that publishes nothing is its own sharded form.
func TestShardedForm(t *testing.T) {
	for name, s := range loaded {
		plain, sh := s.plain.src, s.sharded.src
		pubs := strings.Count(plain, publishCall)
		switch {
		case pubs == 0 && s.sharded != s.plain:
			t.Errorf("%s publishes nothing but has a sharded form", name)
		case pubs > 0 && (strings.Contains(sh, publishCall) || strings.Count(sh, spublishCall) != pubs):
			t.Errorf("%s: %d PUBLISH calls, its sharded form has %d SPUBLISH and %d PUBLISH", name, pubs,
				strings.Count(sh, spublishCall), strings.Count(sh, publishCall))
		case pubs > 0 && strings.ReplaceAll(strings.ReplaceAll(sh, spublishCall, publishCall), shardnumsubCall, numsubCall) != plain:
			t.Errorf("%s: the sharded form differs in more than its publish and subscriber-count calls", name)
		case strings.Count(sh, numsubCall) != 0 || strings.Count(sh, shardnumsubCall) != strings.Count(plain, numsubCall):
			t.Errorf("%s: its sharded form counts subscribers other than sharded ones", name)
		}
	}
	if lockRelease.sharded == lockRelease.plain || lockAcquire.sharded != lockAcquire.plain {
		t.Error("lock_release must have a sharded form, lock_acquire none")
	}
	if lockRelease.of(true) != lockRelease.sharded || lockRelease.of(false) != lockRelease.plain {
		t.Error("of(sharded) picks the wrong form")
	}
}

// Every publish is redis.pcall in exactly the form publishCall names, in
// every script as composed (its helpers spliced in): a PUBLISH refused after
// a script's writes (an ACL without it) must not fail a change Redis has
// applied, and a call in another form would escape the sharded form's
// SPUBLISH.
func TestPublishIsPcall(t *testing.T) {
	anyPublish := regexp.MustCompile(`(?i)['"]s?publish['"]`)
	published := 0
	for _, s := range script.All() {
		all, ok := len(anyPublish.FindAllString(s.Source, -1)), strings.Count(s.Source, publishCall)
		if all != ok {
			t.Errorf("%s: %d publish calls, %d of them %q", s.Name, all, ok, publishCall)
		}
		published += ok
	}
	if published == 0 {
		t.Errorf("no script holds %q", publishCall)
	}
}

// SCRIPT LOAD compiles a script without running it: every form, plain and
// sharded, must be valid Lua, and the server must know it by the SHA that
// EVALSHA (the keeper's pipelined Call) sends.
func TestFormsLoadOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	for name, s := range loaded {
		for _, f := range []*form{s.plain, s.sharded} {
			got, err := srv.Do("SCRIPT", "LOAD", f.src).ToString()
			if err != nil {
				t.Fatalf("%s: SCRIPT LOAD: %v", name, err)
			}
			if got != f.sha {
				t.Errorf("%s: SCRIPT LOAD returned %s, want %s", name, got, f.sha)
			}
		}
	}
}

// semaphore_max in script/lua/lib/semaphore.lua is MaxPermits, the bound the
// Go side checks TrySetPermits and AddPermits against.
func TestSemaphoreMaxIsMaxPermits(t *testing.T) {
	want := "local semaphore_max = " + strconv.FormatInt(MaxPermits, 10) + "\n"
	for _, s := range []*luaScript{semaphoreAcquire, semaphoreRelease, semaphoreAdd, semaphoreAvailable} {
		if !strings.Contains(s.plain.src, want) {
			t.Errorf("%s: source lacks %q", s.plain.name, want)
		}
	}
}

// A leasehold permit id is 16 bytes: the first 8 of the Client's UUID, the
// lease number in 6, the permit's index in its lease in 2. Owners of
// another shape get a hash, still 14 bytes of prefix.
func TestPermitIDs(t *testing.T) {
	tests := []struct{ owner, want string }{
		{"4eb5c37f-6f31-40ae-bc4b-0216be21f3df:2", "4eb5c37f6f3140ae0000000000020003"},
		{"4EB5C37F-6F31-40AE-BC4B-0216BE21F3DF:2", "4eb5c37f6f3140ae0000000000020003"},
		{"4eb5c37f-6f31-40ae-bc4b-0216be21f3df:281474976710657", "4eb5c37f6f3140ae0000000000010003"}, // 2^48+1: the low 48 bits
	}
	for _, tt := range tests {
		if got := hex.EncodeToString([]byte(PermitID(tt.owner, 3))); got != tt.want {
			t.Errorf("PermitID(%q, 3) = %s, want %s", tt.owner, got, tt.want)
		}
	}
	for _, owner := range []string{"plain", "x:1", "4eb5c37f:1", "4eb5c37f-zz31-40ae:1", ":"} {
		if p := PermitPrefix(owner); len(p) != 14 {
			t.Errorf("PermitPrefix(%q) is %d bytes, want 14", owner, len(p))
		}
	}
	if PermitID("a:1", 0) == PermitID("a:1", 1) || PermitPrefix("c:1") == PermitPrefix("c:2") {
		t.Error("ids collide")
	}
}

// A release's keep is whole ms rounded up, never shorter than asked, and
// "0" for none; a keep near the longest Duration does not wrap around to a
// negative PEXPIRE, which would delete the lock at once.
func TestKeepMs(t *testing.T) {
	for _, tt := range []struct {
		give time.Duration
		want string
	}{
		{0, "0"}, {-time.Second, "0"}, {1, "1"}, {time.Millisecond, "1"},
		{time.Millisecond + 1, "2"}, {1500 * time.Millisecond, "1500"},
		{math.MaxInt64, "9223372036855"},
	} {
		if got := keepMs(tt.give); got != tt.want {
			t.Errorf("keepMs(%v) = %s, want %s", tt.give, got, tt.want)
		}
	}
}
