// Package missing decides what a test does when a server it needs is not
// installed: it skips, naming what is missing and the command that installs
// it, so that the suite passes on a machine with Go alone; with
// LEASEHOLD_REQUIRE_SERVERS=1, as CI sets where everything is installed, it
// fails instead, so that nothing is skipped there unseen.
//
//	s, err := dbtest.LaunchPostgres()
//	if err != nil {
//		missing.SkipOrFail(t, err) // returns unless err is a *missing.Server
//		t.Fatal(err)
//	}
package missing

import (
	"errors"
	"fmt"
	"os"
	"testing"
)

// Env, set to 1, makes a missing server fail the test that needs it rather
// than skip it; .ci/run sets it.
const Env = "LEASEHOLD_REQUIRE_SERVERS"

// Server is the error of a server that is not installed here.
type Server struct {
	Name    string // what is missing: "mariadbd"
	Install string // how to install it: "bash .ci/databases, or apt-get install -y mariadb-server"
	Err     error  // what looking for it said
}

func (e *Server) Error() string {
	return fmt.Sprintf("no %s (install it: %s): %v", e.Name, e.Install, e.Err)
}

func (e *Server) Unwrap() error { return e.Err }

// SkipOrFail ends tb when err is or wraps a *Server: it skips tb, saying
// what is missing and how to install it, or fails it when $LEASEHOLD_REQUIRE_SERVERS
// is 1. It returns for any other err, which is the caller's to report.
func SkipOrFail(tb testing.TB, err error) {
	tb.Helper()
	var s *Server
	if !errors.As(err, &s) {
		return
	}
	if os.Getenv(Env) == "1" {
		tb.Fatalf("%v (%s=1: a missing server fails the test)", err, Env)
	}
	tb.Skipf("%v; %s=1 makes this a failure", err, Env)
}
