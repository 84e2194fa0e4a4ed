// Package examples_test builds every example and runs it briefly, as a
// newcomer would (each starts its own redis-server), checking that it
// exits 0 and prints what its doc comment promises.
//
// An example that needs what leasehold's module must not require (cron:
// gocron; fencing: a PostgreSQL driver) is a module of its own, its go.mod in its directory, built against
// this checkout by replace directives: it is built there, with the go.mod a
// service using it would write, and run and checked as the others.
package examples_test

import (
	"bytes"
	"context"
	"net"
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

	"github.com/leasehold/leasehold/internal/harness/dbtest"
	"github.com/leasehold/leasehold/internal/harness/missing"
	"github.com/leasehold/leasehold/internal/harness/racebuild"
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
		`^billing re-entered it: hold count 2, token \d+, the same: true$`,
		`^billing released it; shipping holds it .* later, token \d+, higher: true$`,
		`^the 300ms lease on "nightly-job" was lost after .*: hold "nightly-job": lease: lost: the lease time ran out$`,
	}, nil},
	{"quickstart", "quickstart", nil, []string{
		`^started redis-server on `,
		`^holding the lock$`,
		`^work done; giving the lock back$`,
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
		`^operator: force-releasing the lock of tenant-5$`,
		`^worker \d: lost tenant-5 .*(gone from Redis|renewal found the lock no longer held by this owner).*: stopped; job queued again$`,
		`^lease events \(expvar leasehold\): \{.*"lost": 1,.*\}$`,
		`^ok: all 10 tenants synced exactly once`,
		`stderr:level=WARN msg="lease lost" lock=sync:tenant-5`,
	}, nil},
	{"orders", "orders", []string{"-orders", "300"}, []string{
		`^one at a time: +300 orders in .* \(300 processed, 0 twice\)$`,
		`^pipelined, window 64: +300 orders in .* \(300 processed, 0 twice\)$`,
		`^ok: every order processed exactly once`,
	}, nil},
	{"pipeline", "pipeline", nil, []string{
		`^3 members split 8 partitions: member 1 runs \[[\d ]+\], member 2 runs \[[\d ]+\], member 3 runs \[[\d ]+\]$`,
		`^supervisor: cut member 2 off from Redis \(no goodbye\) while it runs \[[\d ]+\]$`,
		`^member [13]: runs partition \d from offset \d+, token \d+$`,
		`^supervisor: member 2's partitions taken over .* after the cut \(lease 1s\): member 1 runs \[[\d ]+\], member 3 runs \[[\d ]+\]$`,
		`^supervisor: stopped member 2 and healed the network: its commits, retried all along, reach Redis$`,
		`^member 2: partition \d: commit of offset \d+ under token \d+ refused: fence: set ".*": fence: stale token \d+: \d+ applied already$`,
		`^member 4: runs partition \d from offset \d+, token \d+$`,
		`^supervisor: member 4 joined: member 1 runs \[[\d ]+\], member 3 runs \[[\d ]+\], member 4 runs \[[\d ]+\] after .*; 2 partitions moved$`,
		`^ok: no partition ran under two live leases, [23] stale commits refused, every offset rose and is its last owner's$`,
	}, staleRefused},
	{"crawler", "crawler", nil, []string{
		`^supervisor: 3 crawler processes, 4 workers each, at most 3 fetches in flight; 60 pages$`,
		`^supervisor: kill -9 crawler 1 with [123] of the 3 fetches in flight; it cannot release$`,
		`^supervisor: its permits came back .* after the kill \(lease 1s\): 3 fetches in flight again$`,
		`^site: 60 of 60 pages fetched, at most 3 in flight at once$`,
		`^ok: never more than 3 fetches in flight, and the killed crawler's permits came back$`,
	}, nil},
	{"cron", "cron", nil, []string{
		`^supervisor: 3 replicas run "report" every 1s, their schedules offset by 0s, 100ms, 200ms; `,
		`^supervisor: kill -9 replica \d in the middle of its run of tick 3$`,
		`^tick 0: ran once, on replica \d; skipped on \d, \d$`,
		`^tick 1: ran once, on replica \d; skipped on \d, \d$`,
		`^tick 2: ran once, on replica \d; skipped on \d, \d$`,
		`^tick 3: ran once, on replica \d \(killed mid-run\)`,
		`^ok: ticks 0-2 ran once each with the 3 replicas up; tick 3's run was killed; the survivors ran ticks 5-7 once each$`,
	}, nil},
	{"fencing", "fencing", nil, []string{
		`^started postgres on `,
		`^supervisor: SIGSTOP worker 1 while it holds the lock with token (\d+)`,
		`^worker [23]: token \d+: wrote `,
		`^supervisor: SIGCONT worker 1 after `,
		`^worker 1: token \d+: write refused: fence: check "ledger": fence: stale token \d+: \d+ applied already$`,
		`^ledger: .*: it balances$`,
		`^ok: the paused worker's late write was refused \(fence.ErrStale\), and the ledger balances$`,
	}, nil},
	{"fencing-nofence", "fencing", []string{"-nofence"}, []string{
		`^supervisor: SIGSTOP worker 1 while it holds the lock`,
		`^worker [23]: token \d+: wrote `,
		`^worker 1: token \d+: wrote `,
		`^ledger: .*: it DOES NOT balance`,
		`^ok: without the fence the paused worker's late write landed`,
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

// needs are what an example needs besides the redis-server it starts: its
// runs skip without it, saying what to install, or fail under
// LEASEHOLD_REQUIRE_SERVERS=1, as CI runs (internal/harness/missing).
var needs = map[string]func() error{
	// A PostgreSQL it starts, found as the example finds it, unless
	// DATABASE_URL names one.
	"fencing": func() error {
		if os.Getenv("DATABASE_URL") != "" {
			return nil
		}
		_, err := dbtest.FindPostgres()
		return err
	},
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

// staleRefused checks the pipeline example's refusals: one for each
// partition member 2 ran when it was cut off, each under a token below the
// one its partition's new owner ran it under.
func staleRefused(t *testing.T, stdout string) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^supervisor: cut member 2 off from Redis \(no goodbye\) while it runs \[([\d ]+)\]$`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatal("no cut")
	}
	held := strings.Fields(m[1])
	took := map[string]uint64{} // partition -> the token its new owner ran it under
	for _, m := range regexp.MustCompile(`(?m)^member [13]: runs partition (\d) from offset \d+, token (\d+)$`).FindAllStringSubmatch(stdout, -1) {
		took[m[1]], _ = strconv.ParseUint(m[2], 10, 64)
	}
	refused := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^member 2: partition (\d): commit of offset \d+ under token (\d+) refused: `).FindAllStringSubmatch(stdout, -1) {
		tok, _ := strconv.ParseUint(m[2], 10, 64)
		refused[m[1]] = true
		if tok >= took[m[1]] {
			t.Errorf("partition %s: member 2's commit under token %d refused, its new owner's token %d", m[1], tok, took[m[1]])
		}
	}
	if len(refused) != len(held) {
		t.Errorf("member 2 ran %v; commits refused for %d partitions: %v", held, len(refused), refused)
	}
	for _, p := range held {
		if !refused[p] {
			t.Errorf("member 2's commit of partition %s was not refused", p)
		}
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
	flags := []string{"build", "-o", dir + string(filepath.Separator)}
	if racebuild.Enabled { // the examples are built as the tests are
		flags = append(flags, "-race")
	}
	build := slices.Clone(flags)
	seen := map[string]bool{}
	var own []string // examples that are modules of their own
	for _, r := range runs {
		switch {
		case seen[r.example]:
		case ownModule(r.example):
			own = append(own, r.example)
		default:
			build = append(build, "./"+r.example)
		}
		seen[r.example] = true
	}
	// go test puts $GOROOT/bin first on the PATH of the tests it runs.
	if out, err := exec.Command("go", build...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(build, " "), err, out)
	}
	for _, ex := range own {
		cmd := exec.Command("go", append(slices.Clone(flags), ".")...)
		cmd.Dir = ex
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("(cd %s && go %s .): %v\n%s", ex, strings.Join(flags, " "), err, out)
		}
	}
	// As a newcomer runs them: no REDIS_ADDR, so each starts its own server.
	env := withoutRedisAddr()

	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			if need := needs[r.example]; need != nil {
				if err := need(); err != nil {
					missing.SkipOrFail(t, err)
					t.Fatal(err)
				}
			}
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
// as all did while they found their Redis through internal/harness/redistest. (The
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
		pkg, in := "./"+e.Name(), "."
		if ownModule(e.Name()) {
			pkg, in = ".", e.Name()
		}
		t.Run(e.Name(), func(t *testing.T) {
			t.Parallel()
			for _, imp := range goList(t, in, "-f", `{{join .Imports "\n"}}`, pkg) {
				if strings.Contains(imp, "/internal/") {
					t.Errorf("%s imports %s", e.Name(), imp)
				}
			}
			for _, dep := range goList(t, in, "-deps", pkg) {
				if dep == "testing" {
					t.Errorf("%s links package testing", e.Name())
				}
			}
		})
	}
}

// Each example carries its own copy of withRedis in redis.go (quickstart
// has a supervisor instead), and of redis_linux.go and redis_other.go, so
// that it can be copied out alone: this fails when one copy is changed
// without the others.
func TestRedisHelperCopiesAgree(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	first, firstDir := map[string]string{}, map[string]string{}
	agree := func(dir, file, text string) {
		switch {
		case first[file] == "":
			first[file], firstDir[file] = text, dir
		case text != first[file]:
			t.Errorf("%s/%s differs from %s/%s", dir, file, firstDir[file], file)
		}
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		for _, file := range []string{"redis.go", "redis_linux.go", "redis_other.go"} {
			src, err := os.ReadFile(filepath.Join(e.Name(), file))
			if err != nil {
				t.Fatal(err)
			}
			if file == "redis.go" && e.Name() == "quickstart" {
				continue
			}
			agree(e.Name(), file, string(src))
		}
	}
}

// An example's redis-server must not outlive it, however it ends: killed
// by a closed stdout (`| head -2`: SIGPIPE), or by kill -9. Each run reads
// the server's address from the example's first line, ends the example, and
// waits until nothing answers there; the kernel and the example's signal
// handling take a moment, hence the generous 10s.
func TestExampleServerDiesWithIt(t *testing.T) {
	dir := t.TempDir()
	for _, ex := range []string{"workers", "quickstart"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, ex), "./"+ex).CombinedOutput(); err != nil {
			t.Fatalf("go build ./%s: %v\n%s", ex, err, out)
		}
	}
	for _, c := range []struct{ name, example, end string }{
		{"workers-sigpipe", "workers", "close stdout"},
		{"workers-kill", "workers", "kill -9"},
		{"quickstart-sigpipe", "quickstart", "close stdout"},
		{"quickstart-kill", "quickstart", "kill -9"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(filepath.Join(dir, c.example), "-v")
			if c.example == "quickstart" {
				cmd.Args = cmd.Args[:1]
			}
			cmd.Env = withoutRedisAddr()
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line := make([]byte, 256)
			n, err := stdout.Read(line)
			if err != nil {
				t.Fatal(err)
			}
			_, addr, ok := strings.Cut(strings.TrimSpace(string(line[:n])), "started redis-server on ")
			if !ok {
				t.Fatalf("first line %q names no server", line[:n])
			}
			addr, _, _ = strings.Cut(addr, "\n")
			if c.end == "kill -9" {
				_ = cmd.Process.Kill()
			}
			stdout.Close() // the example's next write fails: SIGPIPE
			_ = cmd.Wait()
			deadline := time.Now().Add(10 * time.Second)
			for answers(addr) {
				if time.Now().After(deadline) {
					t.Fatalf("redis-server on %s still answers 10s after the example ended (%s)", addr, c.end)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// answers reports whether something accepts connections at addr.
func answers(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// withoutRedisAddr is the environment with no REDIS_ADDR: an example
// starts its own server, as for a newcomer.
func withoutRedisAddr() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDIS_ADDR=") {
			env = append(env, kv)
		}
	}
	return env
}

// ownModule reports whether the example in dir is a module of its own.
func ownModule(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "go.mod"))
	return err == nil
}

// goList runs go list with args in the directory dir and returns the lines
// it prints.
func goList(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = dir
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

// The README's quick start is examples/quickstart/main.go from its package
// clause on, verbatim, so that it works as written: this test fails when the
// two drift apart.
func TestQuickStartInREADME(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("quickstart", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	_, prog, ok := bytes.Cut(src, []byte("\npackage main\n"))
	if !ok {
		t.Fatal("examples/quickstart/main.go has no package clause")
	}
	block := "```go\npackage main\n" + string(prog) + "```\n"
	if !bytes.Contains(readme, []byte(block)) {
		t.Fatalf("README.md does not show examples/quickstart/main.go verbatim in a ```go block:\n%s", block)
	}
}
