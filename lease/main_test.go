package lease_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/leasehold/leasehold/internal/harness/testmain"
)

// TestMain runs the examples against a redis-server of their own, and checks
// for leaked goroutines.
func TestMain(m *testing.M) { testmain.Run(m, []*string{&redisAddr}, goleak.IgnoreCurrent()) }
