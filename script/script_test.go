package script

import (
	"crypto/sha1"
	"encoding/hex"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/leasehold/leasehold/internal/harness/redistest"
)

// All is every embedded lua/*.lua file, once each.
func TestAllScriptsListed(t *testing.T) {
	files, err := fs.Glob(sources, "lua/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	listed := make(map[string]bool)
	for _, s := range All() {
		if listed[s.Name] {
			t.Errorf("%s is listed twice", s.Name)
		}
		listed[s.Name] = true
	}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "lua/"), ".lua")
		if !listed[name] {
			t.Errorf("%s has no Script in All", f)
		}
		delete(listed, name)
	}
	for name := range listed {
		t.Errorf("All lists %s, which has no lua/%s.lua", name, name)
	}
}

// A marker left in a source would leave its helper undefined: the script
// would load and fail only when it called the helper.
func TestComposedSourcesHaveNoMarker(t *testing.T) {
	for _, s := range All() {
		if strings.Contains(s.Source, "--!") {
			t.Errorf("%s: source holds a \"--!\" line after composition", s.Name)
		}
	}
}

// A script that includes nothing is its file to the byte, so its SHA (the
// name servers and Redisson-side tooling know it by) is what it was.
func TestSourceWithoutIncludesIsTheFile(t *testing.T) {
	for _, s := range All() {
		b, err := sources.ReadFile("lua/" + s.Name + ".lua")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), includeMarker) && s.Source != string(b) {
			t.Errorf("%s: source differs from lua/%s.lua, which includes nothing", s.Name, s.Name)
		}
	}
}

func TestFairScriptsIncludeHelpers(t *testing.T) {
	tests := []struct {
		give string
		want []string
	}{
		{"fair_acquire", []string{"fair_prune", "fair_tell_head", "fair_expire"}},
		{"fair_keep", []string{"fair_prune", "fair_tell_head", "fair_expire"}},
		{"fair_abandon", []string{"fair_prune", "fair_tell_head"}},
		{"fair_release", []string{"fair_prune", "fair_tell_head"}},
		{"fair_force_release", []string{"fair_prune"}},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			i := slices.IndexFunc(scripts, func(s Script) bool { return s.Name == tt.give })
			if i < 0 {
				t.Fatal("no such script")
			}
			s := scripts[i]
			for _, lib := range tt.want {
				body, err := sources.ReadFile("lua/lib/" + lib + ".lua")
				if err != nil {
					t.Fatal(err)
				}
				if n := strings.Count(s.Source, string(body)); n != 1 {
					t.Errorf("source holds lib/%s.lua %d times, want once", lib, n)
				}
			}
		})
	}
}

func TestSHAIsOfComposedSource(t *testing.T) {
	for _, s := range All() {
		sum := sha1.Sum([]byte(s.Source))
		if want := hex.EncodeToString(sum[:]); s.SHA != want {
			t.Errorf("%s: SHA %s, want sha1 of the source %s", s.Name, s.SHA, want)
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
		{"arguments", "--!include h n KEYS[2] ARGV[1]\n", "if $1 then f($2, $3, $1) end\n",
			"if n then f(KEYS[2], ARGV[1], n) end\n"},
		{"a pattern's $ is no parameter", "--!include h x\n", "m = string.match($1, '^%d+$')\n",
			"m = string.match(x, '^%d+$')\n"},
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
		{"an argument missing", "--!include h a\n", "f($1, $2)\n", `"--!include h a": no argument for $2`},
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
	for _, s := range All() {
		t.Run(s.Name, func(t *testing.T) {
			got, err := srv.Do("SCRIPT", "LOAD", s.Source).ToString()
			if err != nil {
				t.Fatalf("SCRIPT LOAD: %v", err)
			}
			if got != s.SHA {
				t.Errorf("SCRIPT LOAD returned %s, want %s", got, s.SHA)
			}
		})
	}
}
