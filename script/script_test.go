package script

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/redistest"
)

// allScripts is every Script of the package; TestAllScriptsListed keeps it
// in step with the embedded lua/*.lua files.
var allScripts = []*Script{
	LockAcquire, LockRelease, LockRenew, LockForceRelease,
	FairAcquire, FairAbandon, FairRelease, FairForceRelease,
	RWReadAcquire, RWReadRelease, RWReadRenew,
	RWWriteAcquire, RWWriteRelease, RWWriteRenew, RWWriteAbandon,
	TokenRaise,
}

func TestAllScriptsListed(t *testing.T) {
	files, err := fs.Glob(sources, "lua/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	listed := make(map[string]bool)
	for _, s := range allScripts {
		listed[s.Name()] = true
	}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "lua/"), ".lua")
		if !listed[name] {
			t.Errorf("%s has no Script in allScripts", f)
		}
		delete(listed, name)
	}
	for name := range listed {
		t.Errorf("allScripts lists %s, which has no lua/%s.lua", name, name)
	}
}

// A marker left in a source would leave its helper undefined: the script
// would load and fail only when it called the helper.
func TestComposedSourcesHaveNoMarker(t *testing.T) {
	for _, s := range allScripts {
		if strings.Contains(s.Source(), "--!") {
			t.Errorf("%s: source holds a \"--!\" line after composition", s.Name())
		}
	}
}

// A script that includes nothing is its file to the byte, so its SHA (the
// name servers and Redisson-side tooling know it by) is what it was.
func TestSourceWithoutIncludesIsTheFile(t *testing.T) {
	for _, s := range allScripts {
		b, err := sources.ReadFile("lua/" + s.Name() + ".lua")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), includeMarker) && s.Source() != string(b) {
			t.Errorf("%s: source differs from lua/%s.lua, which includes nothing", s.Name(), s.Name())
		}
	}
}

func TestFairScriptsIncludeHelpers(t *testing.T) {
	tests := []struct {
		give *Script
		want []string
	}{
		{FairAcquire, []string{"fair_prune", "fair_tell_head"}},
		{FairAbandon, []string{"fair_prune", "fair_tell_head"}},
		{FairRelease, []string{"fair_prune", "fair_tell_head"}},
		{FairForceRelease, []string{"fair_prune"}},
	}
	for _, tt := range tests {
		t.Run(tt.give.Name(), func(t *testing.T) {
			for _, lib := range tt.want {
				body, err := sources.ReadFile("lua/lib/" + lib + ".lua")
				if err != nil {
					t.Fatal(err)
				}
				if n := strings.Count(tt.give.Source(), string(body)); n != 1 {
					t.Errorf("source holds lib/%s.lua %d times, want once", lib, n)
				}
			}
		})
	}
}

func TestSHAIsOfComposedSource(t *testing.T) {
	for _, s := range allScripts {
		sum := sha1.Sum([]byte(s.Source()))
		if want := hex.EncodeToString(sum[:]); s.SHA() != want {
			t.Errorf("%s: SHA %s, want sha1 of the source %s", s.Name(), s.SHA(), want)
		}
	}
}

func TestCompose(t *testing.T) {
	tests := []struct {
		name string
		give string // lua/s.lua
		lib  string // lua/lib/h.lua
		want string
	}{
		{"no include", "return 1\n", "", "return 1\n"},
		{"include", "a()\n--!include h\nb()\n", "local function h() end\n", "a()\nlocal function h() end\nb()\n"},
		{"helper without final newline", "--!include h\nh()\n", "local function h() end", "local function h() end\nh()\n"},
		{"last line", "x()\n--!include h", "local function h() end\n", "x()\nlocal function h() end\n"},
		{"CRLF", "--!include h\r\nh()\r\n", "local function h() end\n", "local function h() end\nh()\r\n"},
		{"marker not at line start", "x = 1 --!include h\n", "local function h() end\n", "x = 1 --!include h\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{
				"lua/s.lua":     {Data: []byte(tt.give)},
				"lua/lib/h.lua": {Data: []byte(tt.lib)},
			}
			if got := compose(fsys, "s"); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// A bad include is a build defect: it must stop the package at init, as a
// missing script file does, not surface as a Lua error in production.
func TestComposePanics(t *testing.T) {
	tests := []struct {
		name string
		give string // lua/s.lua
		lib  string // lua/lib/h.lua
		want string // in the panic
	}{
		{"unknown helper", "--!include nope\n", "", `"--!include nope": open lua/lib/nope.lua: file does not exist`},
		{"misspelt marker", "--!inlcude h\n", "", `"--!inlcude h" is not --!include NAME`},
		{"no name", "--!include \n", "", `"--!include " is not --!include NAME`},
		{"included twice", "--!include h\n--!include h\n", "local x\n", `"--!include h": included twice`},
		{"nested include", "--!include h\n", "local x\n--!include h\n", `"--!include h": a helper includes nothing`},
		{"nested at the top", "--!include h\n", "--!include h\n", `"--!include h": a helper includes nothing`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{
				"lua/s.lua":     {Data: []byte(tt.give)},
				"lua/lib/h.lua": {Data: []byte(tt.lib)},
			}
			got := panicOf(func() { compose(fsys, "s") })
			if want := "script: lua/s.lua: " + tt.want; got != want {
				t.Errorf("panic %q, want %q", got, want)
			}
		})
	}
	if got := panicOf(func() { compose(fstest.MapFS{}, "s") }); got != "script: open lua/s.lua: file does not exist" {
		t.Errorf("missing script: panic %q", got)
	}
}

func panicOf(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg, _ = r.(string)
		}
	}()
	f()
	return ""
}

// SCRIPT LOAD compiles a script without running it: every composed source
// must be valid Lua, and the server must know it by the SHA EVALSHA sends.
func TestScriptsLoadOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	for _, s := range allScripts {
		t.Run(s.Name(), func(t *testing.T) {
			got, err := srv.Do("SCRIPT", "LOAD", s.Source()).ToString()
			if err != nil {
				t.Fatalf("SCRIPT LOAD: %v", err)
			}
			if got != s.SHA() {
				t.Errorf("SCRIPT LOAD returned %s, want %s", got, s.SHA())
			}
		})
	}
}

// The helpers take their keys and arguments as parameters, and the scripts
// number them differently (the channel prefix is KEYS[5] of fair_acquire,
// KEYS[4] of the others): this pins down that each script passes its own, by
// the head's channel and message each one publishes, and that prune drops a
// stale head in each, on every path that calls them.
func TestFairScriptsPruneAndTellHead(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const name = "f"
	// A refresh interval longer than the lease: tell_head tells the head
	// whenever it is called.
	lease, ft := time.Minute, FairTimes{Queue: time.Minute, Refresh: 2 * time.Minute}
	heard := listen(t, srv, LockChannel(name)+":*")
	marker := LockChannel(name) + ":marker"

	acquire := func(owner string) func() (any, error) {
		return func() (any, error) {
			g, err := AcquireFair(ctx, c, name, owner, lease, ft, true)
			return g.Acquired, err
		}
	}
	release := func(owner, requestID string) func() (any, error) {
		return func() (any, error) {
			return ReleaseFair(ctx, c, name, owner, requestID, lease, time.Minute, ft, true)
		}
	}
	abandon := func(owner string) func() (any, error) {
		return func() (any, error) { return AbandonFair(ctx, c, name, owner, ft) }
	}
	force := func() (any, error) { return ForceReleaseFair(ctx, c, name) }

	// Each step runs on the state the ones before left.
	steps := []struct {
		name  string
		stale bool // put a waiter whose deadline has passed at the head first
		act   func() (any, error)
		want  any
		queue []string
		told  string // the owner told to try, "" for none
	}{
		{"a takes the free lock", false, acquire("a"), true, nil, ""},
		{"b queues", false, acquire("b"), false, []string{"b"}, ""},
		{"c queues", false, acquire("c"), false, []string{"b", "c"}, ""},
		{"fair_abandon: the head leaves", false, abandon("b"), true, []string{"c"}, "c"},
		{"fair_release frees", true, release("a", "r1"), Freed, []string{"c"}, "c"},
		{"fair_acquire: a newcomer to a free lock queues", true, acquire("d"), false, []string{"c", "d"}, "c"},
		{"fair_acquire: the head takes the lock", false, acquire("c"), true, []string{"d"}, "d"},
		{"fair_acquire: the holder re-enters", true, acquire("c"), true, []string{"d"}, "d"},
		{"fair_force_release", true, force, true, []string{"d"}, "d"},
		{"fair_release after the lease ran out", true, release("c", "r2"), NotHeld, []string{"d"}, "d"},
	}
	for _, st := range steps {
		if st.stale {
			srv.Do("LPUSH", FairQueueKey(name), "stale")
			srv.Do("ZADD", FairTimeoutKey(name), "0", "stale")
		}
		if got, err := st.act(); err != nil || got != st.want {
			t.Fatalf("%s: got %v, %v; want %v", st.name, got, err, st.want)
		}
		queue, err := srv.Do("LRANGE", FairQueueKey(name), "0", "-1").AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		deadlines, _ := srv.Do("ZCARD", FairTimeoutKey(name)).AsInt64()
		if strings.Join(queue, ",") != strings.Join(st.queue, ",") || deadlines != int64(len(st.queue)) {
			t.Fatalf("%s: queue %v with %d deadlines, want %v", st.name, queue, deadlines, st.queue)
		}
		// The marker comes first when nobody was told.
		if err := c.Do(ctx, c.B().Publish().Channel(marker).Message("m").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		want := []string{marker + " m"}
		if st.told != "" {
			want = append([]string{FairChannel(name, st.told) + " " + UnlockMessage}, want...)
		}
		for _, w := range want {
			if got := next(t, heard); got != w {
				t.Fatalf("%s: heard %q, want %q", st.name, got, w)
			}
		}
	}
}

// listen pattern-subscribes to pattern and returns "CHANNEL MESSAGE" of each
// message heard, until the test ends.
func listen(t *testing.T, srv *redistest.Server, pattern string) <-chan string {
	t.Helper()
	rc := srv.Client()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan string, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = rc.Receive(ctx, rc.B().Psubscribe().Pattern(pattern).Build(), func(m rueidis.PubSubMessage) {
			select {
			case ch <- m.Channel + " " + m.Message:
			default:
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(5 * time.Second)
	for {
		if n, _ := srv.Do("PUBSUB", "NUMPAT").AsInt64(); n == 1 {
			return ch
		}
		if time.Now().After(deadline) {
			t.Fatal("not subscribed within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// next returns the next message heard, failing the test after 5s.
func next(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no message within 5s")
		return ""
	}
}
