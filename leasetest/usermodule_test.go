package leasetest_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A module outside the repository, as a user's is (example/: a program
// that takes every kind of lock, and its unit tests on the kit), passes
// go test on a PATH that holds nothing but the go command: no
// redis-server, no C compiler.
func TestUserModuleNeedsNothingInstalled(t *testing.T) {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skipf("no go command to run the user module's tests with: %v", err)
	}
	bin := filepath.Join(strings.TrimSpace(string(goroot)), "bin")
	for _, name := range []string{"redis-server", "valkey-server", "gcc"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err == nil {
			t.Fatalf("%s is in %s: that PATH would not be empty of it", name, bin)
		}
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := copyDir(dir, "example"); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + bin, "GOTOOLCHAIN=local", "GOWORK=off", "GOFLAGS=", "CGO_ENABLED=0"}
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "PATH", "GOTOOLCHAIN", "GOWORK", "GOFLAGS", "CGO_ENABLED":
		default:
			env = append(env, kv)
		}
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, "go"), args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// Its replace directives point at this checkout, wherever the copy is.
	run("mod", "edit", "-replace=github.com/leasehold/leasehold="+repo,
		"-replace=github.com/leasehold/leasehold/leasetest="+filepath.Join(repo, "leasetest"))
	start := time.Now()
	out := run("test", "-count=1", "./...")
	t.Logf("go test in the user module: %v\n%s", time.Since(start).Round(time.Millisecond), out)
	if !strings.Contains(out, "ok  \texample.com/warehouse") {
		t.Fatalf("the user module's tests did not pass:\n%s", out)
	}
}

// copyDir copies the files of src into dst.
func copyDir(dst, src string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}
