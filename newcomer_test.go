package leasehold_test

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
)

// What a newcomer runs from a clone points at nothing outside it: .ci/redis
// suggested ../shared/servers/build.sh, which the repository does not have.
func TestNewcomerPathsInRepository(t *testing.T) {
	for _, file := range []string{".ci/redis", "README.md"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "../shared") {
			t.Errorf("%s points at ../shared, outside the repository", file)
		}
	}
}

// Open's and New's errors are in one shape, documented: "leasehold: open:
// ..." (or new), wrapping lease.ErrInvalid for a bad option, lease.ErrRedis
// for a server the Client cannot work on, rueidis' error for a Redis not
// reached; never a *lease.Error, which names a lock. A bad option's error
// read "lease: invalid argument: ..." with no word of Open.
func TestOpenErrors(t *testing.T) {
	srv := redistest.Start(t)
	replica := redistest.Start(t, "--replicaof", "127.0.0.1", strconv.Itoa(srv.Port()))
	free, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dead := srv.Option()
	dead.InitAddress = []string{"127.0.0.1:" + strconv.Itoa(free)}
	for _, tt := range []struct {
		name, prefix string
		err          func() error
		want         error
	}{
		{"bad option", "leasehold: open: ", func() error {
			_, err := leasehold.Open(srv.Option(), leasehold.WithKeyPrefix("{x}"))
			return err
		}, lease.ErrInvalid},
		{"bad option to New", "leasehold: new: ", func() error {
			_, err := leasehold.New(srv.Client(), leasehold.WithWatchdog(time.Nanosecond))
			return err
		}, lease.ErrInvalid},
		{"nil client", "leasehold: new: ", func() error {
			_, err := leasehold.New(nil)
			return err
		}, lease.ErrInvalid},
		{"replica", "leasehold: open: ", func() error {
			_, err := leasehold.Open(replica.Option())
			return err
		}, lease.ErrRedis},
		{"replica to New", "leasehold: new: ", func() error {
			_, err := leasehold.New(replica.Client())
			return err
		}, lease.ErrRedis},
		{"unreachable", "leasehold: open: ", func() error {
			_, err := leasehold.Open(dead)
			return err
		}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err()
			var le *lease.Error
			switch {
			case err == nil:
				t.Fatal("no error")
			case !strings.HasPrefix(err.Error(), tt.prefix) || strings.Count(err.Error(), "leasehold:") != 1:
				t.Errorf("%q: want it to begin %q, once", err, tt.prefix)
			case tt.want != nil && !errors.Is(err, tt.want):
				t.Errorf("%q: want it to wrap %v", err, tt.want)
			case errors.As(err, &le):
				t.Errorf("%q is a *lease.Error, which names a lock", err)
			}
		})
	}
}

// README.md is what a newcomer reads first: under 400 lines (depth lives in
// docs/), with, near its top, the two commands run from a clone (the main
// example, and the test command .ci/run runs), and a quick start that says
// where its Redis comes from (it read localhost:6379, while the example
// started a server of its own and said nothing of it).
func TestREADMEForANewcomer(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if n := strings.Count(readme, "\n"); n >= 400 {
		t.Errorf("README.md has %d lines, want under 400: move depth to docs/", n)
	}
	_, clone, ok := strings.Cut(readme, "\n## Trying it from a clone\n")
	if !ok {
		t.Fatal(`README.md has no "## Trying it from a clone" section`)
	}
	clone, _, _ = strings.Cut(clone, "\n## ")
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"go run ./examples/", "go test -race -count=1 ./..."} {
		if !strings.Contains(clone, cmd) {
			t.Errorf("README's section for a clone does not give %q", cmd)
		}
	}
	if !strings.Contains(string(ci), "\ngo test -race -count=1 ./...\n") {
		t.Error(".ci/run does not run README's test command, go test -race -count=1 ./...")
	}
	_, quick, ok := strings.Cut(readme, "\n## Quick start\n")
	if !ok {
		t.Fatal(`README.md has no "## Quick start" section`)
	}
	quick, _, _ = strings.Cut(quick, "```go")
	for _, says := range []string{"REDIS_ADDR", "starts a redis-server of its own"} {
		if !strings.Contains(quick, says) {
			t.Errorf("README's quick start does not say where its Redis comes from (%q)", says)
		}
	}
}
