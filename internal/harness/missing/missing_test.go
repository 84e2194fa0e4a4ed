package missing_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/leasehold/leasehold/internal/harness/missing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// child is set in the test binary run by TestSkipOrFail, which then only
// meets a missing server.
const child = "LEASEHOLD_MISSING_CHILD"

// A test whose server is missing skips, saying what is missing and how to
// install it; with LEASEHOLD_REQUIRE_SERVERS=1, as CI runs, it fails: a
// machine without the server then fails the suite instead of passing it
// with the test unrun. Each case runs the test binary again, as go test
// would run a test that needs the server.
func TestSkipOrFail(t *testing.T) {
	if os.Getenv(child) == "1" {
		missing.SkipOrFail(t, fmt.Errorf("start: %w", &missing.Server{Name: "frobd", Install: "apt-get install -y frob", Err: errors.New("not found")}))
		t.Fatal("SkipOrFail returned for a missing server")
	}
	for _, c := range []struct {
		env    string
		result string // go test -v's line for the test
		fails  bool
	}{
		{"", "--- SKIP", false},
		{"0", "--- SKIP", false},
		{"1", "--- FAIL", true},
	} {
		t.Run(missing.Env+"="+c.env, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestSkipOrFail$", "-test.v")
			cmd.Env = append(os.Environ(), child+"=1", missing.Env+"="+c.env)
			out, err := cmd.CombinedOutput()
			if failed := err != nil; failed != c.fails {
				t.Fatalf("the test failed: %v, want %v (err %v)\n%s", failed, c.fails, err, out)
			}
			for _, want := range []string{c.result, "no frobd (install it: apt-get install -y frob): not found"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("the test's output has no %q:\n%s", want, out)
				}
			}
		})
	}
}

// Any other error is the caller's: SkipOrFail neither skips nor fails.
func TestOtherErrorsReturn(t *testing.T) {
	var skipped, failed bool
	t.Run("other", func(t *testing.T) {
		defer func() { skipped, failed = t.Skipped(), t.Failed() }()
		missing.SkipOrFail(t, errors.New("exited at start"))
		missing.SkipOrFail(t, nil)
	})
	if skipped || failed {
		t.Fatalf("an error that is no missing server skipped (%v) or failed (%v) the test", skipped, failed)
	}
}

// CI installs every server the suite starts (.ci/redis, .ci/faults,
// .ci/databases), so it must set LEASEHOLD_REQUIRE_SERVERS=1 before its
// first test, and pass it on where it runs tests through sudo: without it a
// server CI failed to install would be skipped, and CI pass.
func TestCIRequiresServers(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	run := string(src)
	set := strings.Index(run, "\nexport "+missing.Env+"=1\n")
	firstTest := regexp.MustCompile(`\n[^#\n]*go test `).FindStringIndex(run)
	if set < 0 || firstTest == nil || set > firstTest[0] {
		t.Errorf(".ci/run does not export %s=1 before its first go test", missing.Env)
	}
	for _, line := range strings.Split(run, "\n") {
		if strings.Contains(line, "sudo env ") && !strings.Contains(line, missing.Env+"=1") {
			t.Errorf(".ci/run runs tests through sudo without %s=1 (sudo drops the environment):\n%s", missing.Env, line)
		}
	}
}
