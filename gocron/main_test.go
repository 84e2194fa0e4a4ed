package leaseholdgocron_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/leasehold/leasehold/internal/harness/testmain"
)

// redisAddr is the redis-server the examples run against, started by
// TestMain; each test starts one of its own (redistest.Start).
var redisAddr string

// TestMain runs the tests and examples, then checks that no goroutine is
// left: the schedulers' and Electors' included.
func TestMain(m *testing.M) { testmain.Run(m, []*string{&redisAddr}, goleak.IgnoreCurrent()) }
