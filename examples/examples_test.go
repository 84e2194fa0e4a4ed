// Package examples_test builds every example and runs it briefly, as a
// newcomer would (each starts its own redis-server), checking that it
// exits 0 and prints what its doc comment promises.
package examples_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runs are the example runs: the example, its flags, what it must print to
// stdout (stderr when the pattern starts with "stderr:"), in order, and any
// further check of its stdout.
var runs = []struct {
	name, example string
	args          []string
	want          []string
	check         func(t *testing.T, stdout string)
}{
	{"basic", "basic", nil, []string{
		`^billing holds "orders", fencing token \d+$`,
		`^billing re-entered it: hold count 2, token \d+, higher: true$`,
		`^billing released it; shipping holds it .* later, token \d+, higher: true$`,
		`^the 300ms lease on "nightly-job" was lost after .*: hold "nightly-job": lease: lost: the lease time ran out$`,
	}, nil},
	{"quickstart", "quickstart", nil, []string{
		`^holding "quickstart", fencing token \d+$`,
		`^work done; releasing$`,
	}, nil},
	{"coupons", "coupons", nil, []string{
		`^handed out 100 of 100; stock left 0, lowest 0$`,
		`^ok: with the lock the stock never went below zero$`,
	}, nil},
	{"coupons-nolock", "coupons", []string{"-nolock", "-stock", "50"}, []string{
		`WITHOUT a lock`,
		`^handed out \d+ of 50; stock left -?\d+, lowest -?\d+$`,
	}, nil},
	{"workers", "workers", []string{"-v"}, []string{
		`^operator: force-released the lock of tenant-5$`,
		`^worker \d: lost tenant-5 .*(gone from Redis|renewal found the lock no longer held by this owner).*: stopped; job queued again$`,
		`^lease events \(expvar leasehold\): \{.*"lost": 1,.*\}$`,
		`^ok: all 10 tenants synced exactly once`,
		`stderr:level=WARN msg="lease lost" lock=sync:tenant-5`,
	}, nil},
	{"pipeline", "pipeline", []string{"-orders", "300"}, []string{
		`^one at a time: +300 orders in .* \(300 processed, 0 twice\)$`,
		`^pipelined, window 64: +300 orders in .* \(300 processed, 0 twice\)$`,
		`^ok: every order processed exactly once`,
	}, nil},
	{"crawler", "crawler", nil, []string{
		`^supervisor: 3 crawler processes, 4 workers each, at most 3 fetches in flight; 60 pages$`,
		`^supervisor: kill -9 crawler 1 with [123] of the 3 fetches in flight; it cannot release$`,
		`^supervisor: its permits came back .* after the kill \(lease 1s\): 3 fetches in flight again$`,
		`^site: 60 of 60 pages fetched, at most 3 in flight at once$`,
		`^ok: never more than 3 fetches in flight, and the killed crawler's permits came back$`,
	}, nil},
	{"leader", "leader", nil, []string{
		// The first term: its candidate's line and the observer's come in
		// either order; termsRise checks the candidates' lines.
		`^observer: term \d+: \S+:\d+ leads \(candidate \d\)$`,
		`^supervisor: kill -9 candidate \d`,
		`^supervisor: candidate \d took over .* after the kill \(lease 1s\)$`,
		`^supervisor: candidate \d took over .* after the SIGTERM$`,
		`^observer: nobody leads since term \d+, .* after the SIGTERM$`,
		`^ok: one leader in each of 3 terms, rising`,
	}, termsRise},
}

// termsRise checks the leader example's terms: the candidates led in 3
// terms, each above the one before, and the observer printed each of them,
// in the same order, and no other.
func termsRise(t *testing.T, stdout string) {
	t.Helper()
	led := terms(stdout, `(?m)^candidate \d: leader in term (\d+) as `)
	seen := terms(stdout, `(?m)^observer: term (\d+): `)
	t.Logf("terms led: %v; observed: %v", led, seen)
	if len(led) != 3 {
		t.Errorf("%d terms led, want 3: %v", len(led), led)
	}
	for i := 1; i < len(led); i++ {
		if led[i] <= led[i-1] {
			t.Errorf("term %d led after term %d", led[i], led[i-1])
		}
	}
	if !slices.Equal(seen, led) {
		t.Errorf("the observer printed terms %v, the candidates led in %v", seen, led)
	}
}

// terms parses the terms that the lines matching rx name, in order.
func terms(stdout, rx string) []uint64 {
	var out []uint64
	for _, m := range regexp.MustCompile(rx).FindAllStringSubmatch(stdout, -1) {
		n, _ := strconv.ParseUint(m[1], 10, 64)
		out = append(out, n)
	}
	return out
}

func TestExamples(t *testing.T) {
	dir := t.TempDir()
	build := []string{"build", "-o", dir + string(filepath.Separator)}
	if raceEnabled {
		build = append(build, "-race")
	}
	seen := map[string]bool{}
	for _, r := range runs {
		if !seen[r.example] {
			seen[r.example] = true
			build = append(build, "./"+r.example)
		}
	}
	// go test puts $GOROOT/bin first on the PATH of the tests it runs.
	if out, err := exec.Command("go", build...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(build, " "), err, out)
	}
	// As a newcomer runs them: no REDIS_ADDR, so each starts its own server.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDIS_ADDR=") {
			env = append(env, kv)
		}
	}

	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(dir, r.example), r.args...)
			cmd.Env = env
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			err := cmd.Run()
			t.Logf("$ %s %s  (%v)\n%s", r.example, strings.Join(r.args, " "), time.Since(start).Round(time.Millisecond), stdout.String())
			if err != nil {
				t.Fatalf("%s: %v\nstderr:\n%s", r.example, err, stderr.String())
			}
			wantLines(t, stdout.String(), stderr.String(), r.want)
			if r.check != nil {
				r.check(t, stdout.String())
			}
		})
	}
}

// Each example must still build when its directory is copied out of the
// module on its own: this fails when one imports a package under
// internal/, which only this module may import, or links package testing,
// as all did while they found their Redis through internal/redistest. (The
// public packages they import use leasehold's internal packages, which is
// fine: those come with the module.)
func TestExamplesStandAlone(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		pkg := "./" + e.Name()
		t.Run(e.Name(), func(t *testing.T) {
			t.Parallel()
			for _, imp := range goList(t, "-f", `{{join .Imports "\n"}}`, pkg) {
				if strings.Contains(imp, "/internal/") {
					t.Errorf("%s imports %s", pkg, imp)
				}
			}
			for _, dep := range goList(t, "-deps", pkg) {
				if dep == "testing" {
					t.Errorf("%s links package testing", pkg)
				}
			}
		})
	}
}

// Each example carries its own copy of withRedis in redis.go, so that it
// can be copied out alone: this fails when one copy is changed without the
// others.
func TestRedisHelperCopiesAgree(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var first, firstDir string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		src, err := os.ReadFile(filepath.Join(e.Name(), "redis.go"))
		if err != nil {
			t.Fatal(err)
		}
		// From withRedis's doc comment on: quickstart's file has its main
		// above it.
		_, helper, ok := strings.Cut(string(src), "\n// withRedis ")
		switch {
		case !ok:
			t.Errorf("%s/redis.go has no withRedis", e.Name())
		case first == "":
			first, firstDir = helper, e.Name()
		case helper != first:
			t.Errorf("withRedis in %s/redis.go differs from the one in %s/redis.go", e.Name(), firstDir)
		}
	}
}

// goList runs go list with args and returns the lines it prints.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.Fields(string(out))
}

// wantLines checks that stdout holds a line matching each pattern, in order;
// patterns starting with "stderr:" are looked for anywhere in stderr.
func wantLines(t *testing.T, stdout, stderr string, patterns []string) {
	t.Helper()
	lines := strings.Split(stdout, "\n")
	i := 0
	for _, p := range patterns {
		if p, ok := strings.CutPrefix(p, "stderr:"); ok {
			if !regexp.MustCompile(p).MatchString(stderr) {
				t.Errorf("stderr has nothing matching %q:\n%s", p, stderr)
			}
			continue
		}
		rx := regexp.MustCompile(p)
		for i < len(lines) && !rx.MatchString(lines[i]) {
			i++
		}
		if i == len(lines) {
			t.Fatalf("no line matching %q (in order) in the output", p)
		}
		i++
	}
}

// The README's quick start is the run function of examples/quickstart/main.go,
// verbatim, so that it works as written: this test fails when the two drift
// apart.
func TestQuickStartInREADME(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("quickstart", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	_, fn, ok := bytes.Cut(src, []byte("\nfunc run("))
	if !ok {
		t.Fatal("examples/quickstart/main.go has no func run")
	}
	fn, _, ok = bytes.Cut(fn, []byte("\n}\n"))
	if !ok {
		t.Fatal("examples/quickstart/main.go: func run has no end")
	}
	block := "```go\nfunc run(" + string(fn) + "\n}\n```\n"
	if !bytes.Contains(readme, []byte(block)) {
		t.Fatalf("README.md does not show the run function of examples/quickstart/main.go verbatim in a ```go block:\n%s", block)
	}
}
