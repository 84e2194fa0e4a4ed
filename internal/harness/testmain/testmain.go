// Package testmain runs a package's tests and testable examples with
// redis-servers for the examples, then checks for leaked goroutines as
// goleak.VerifyTestMain does.
//
// Testable examples get no testing.T to start a server with, so the
// package's TestMain starts them and the examples read the address:
//
//	var redisAddr string // the Redis the examples run against
//
//	func TestMain(m *testing.M) {
//		testmain.Run(m, []*string{&redisAddr}, goleak.IgnoreCurrent())
//	}
//
// goleak.IgnoreCurrent, taken before any test runs, leaves out only the
// test framework's own goroutines.
package testmain

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/leasehold/leasehold/internal/harness/redistest"
)

// Run starts one redis-server for each address pointer and sets the address,
// runs the tests and examples, stops the servers, and then fails the run if
// goroutines are left over (goleak.Find with opts). It exits the process with
// the run's status.
func Run(m *testing.M, addrs []*string, opts ...goleak.Option) {
	var srvs []*redistest.Server
	stop := func() {
		for _, s := range srvs {
			s.Stop()
		}
	}
	for _, addr := range addrs {
		srv, err := redistest.Launch()
		if err != nil {
			stop()
			fmt.Fprintf(os.Stderr, "testmain: redis-server for the examples: %v\n", err)
			os.Exit(1)
		}
		srvs = append(srvs, srv)
		*addr = srv.Addr()
	}
	code := m.Run()
	// Stopped before goleak looks: each server has a goroutine waiting for
	// its process.
	stop()
	if code == 0 {
		if err := goleak.Find(opts...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: Errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
