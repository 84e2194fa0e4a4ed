package leasetest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/leasetest"
)

// Every test's servers and Clients are gone by the time its Cleanup has
// run: goleak finds no goroutine of theirs left.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// ctxTimeout is a ctx ending after d or with the test.
func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it holds, failing t after d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
	}
}

// acquire takes l or fails t.
func acquire(t *testing.T, ctx context.Context, l lease.Locker) *lease.Lease {
	t.Helper()
	ls, err := l.Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	return ls
}

// release gives ls back or fails t.
func release(t *testing.T, ls *lease.Lease) {
	t.Helper()
	if err := ls.Release(context.Background()); err != nil {
		t.Fatalf("Release %s: %v", ls.Name(), err)
	}
}

// result waits up to d for f's lease, failing t on an error or none.
func result(t *testing.T, f *lease.Future, d time.Duration) *lease.Lease {
	t.Helper()
	select {
	case <-f.Done():
	case <-time.After(d):
		t.Fatalf("no lease within %v", d)
	}
	ls, err := f.Result()
	if err != nil {
		t.Fatalf("waiter: %v", err)
	}
	return ls
}

// exampleT stands in the examples for the *testing.T a test is given (an
// example has none): it keeps the cleanups the kit registers, and runs
// them, last first, when the example calls end, as a test does when it
// ends. The kit calls nothing else of a testing.TB.
type exampleT struct {
	testing.TB
	cleanups []func()
}

func (t *exampleT) Helper()                        {}
func (t *exampleT) Logf(string, ...any)            {}
func (t *exampleT) Cleanup(f func())               { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }

func (t *exampleT) end() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

// rawClient is a client of the test's own on srv, closed when the test
// ends, with the options the in-process server needs.
func rawClient(t *testing.T, srv *leasetest.Server) rueidis.Client {
	t.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()},
		DisableCache: true, AlwaysRESP2: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	return rc
}
