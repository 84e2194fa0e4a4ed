package rlock_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/testmain"
)

// TestMain runs the tests, and the examples against a redis-server of
// their own, and checks for leaked goroutines.
func TestMain(m *testing.M) { testmain.Run(m, []*string{&redisAddr}, goleak.IgnoreCurrent()) }

// Shared test helpers (internal/harness/locktest).
var (
	open        = locktest.Open
	eventually  = locktest.Eventually
	ctxTimeout  = locktest.Ctx
	mustAcquire = locktest.MustAcquire
	release     = locktest.Release
	javaLock    = locktest.JavaLock
	javaUnlock  = locktest.JavaUnlock
	isLost      = locktest.IsLost
	wantErr     = locktest.WantErr
)
