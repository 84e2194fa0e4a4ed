package fairqueue_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
)

// ranOut reports the refusal of an acquisition whose lease, a few
// milliseconds long, ran out before the acquisition returned, as it may on a
// loaded machine: not bad input, but no lease.
func ranOut(err error, ttl time.Duration) bool {
	return ttl > 0 && ttl < 100*time.Millisecond && errors.Is(err, lease.ErrNotAcquired) && errors.Is(err, lease.ErrLost)
}

// Fair-lock names, lease times and queue timeouts from the fuzzer (the seeds
// run with the tests; go test -fuzz FuzzFairLock ./fairqueue explores):
// nothing panics, bad input is refused with an error wrapping
// lease.ErrInvalid, and any other input takes the lock and gives it back.
func FuzzFairLock(f *testing.F) {
	srv := redistest.Start(f)
	c, err := leasehold.New(srv.Client())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { c.Close() })
	f.Add("orders", int64(0), int64(0))
	f.Add("", int64(time.Second), int64(time.Second))
	f.Add("{tag}:x", int64(time.Second), int64(1))
	f.Add("a{}b", int64(-1), int64(-1))
	f.Add("é-名-🔒", int64(minLease), int64(math.MaxInt64))
	f.Add("short", int64(minLease-1), int64(time.Nanosecond))
	f.Add(strings.Repeat("q", 1<<16), int64(math.MaxInt64), int64(time.Hour))
	f.Add("nul\x00byte", int64(math.MinInt64), int64(math.MinInt64))
	f.Fuzz(func(t *testing.T, name string, leaseTime, queueTimeout int64) {
		var opts []leasehold.LockOption
		if leaseTime != 0 {
			opts = append(opts, leasehold.WithLeaseTime(time.Duration(leaseTime)))
		}
		if queueTimeout != 0 {
			opts = append(opts, leasehold.WithQueueTimeout(time.Duration(queueTimeout)))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		l := fairqueue.New(c, name, opts...)
		ls, err := l.TryAcquire(ctx)
		if name == "" || (leaseTime != 0 && leaseTime < int64(minLease)) || queueTimeout < 0 {
			if !errors.Is(err, lease.ErrInvalid) {
				t.Fatalf("name %q, lease %v, queue timeout %v: TryAcquire = %v, want ErrInvalid",
					name, time.Duration(leaseTime), time.Duration(queueTimeout), err)
			}
			return
		}
		if ranOut(err, time.Duration(leaseTime)) {
			return
		}
		if err != nil {
			t.Fatalf("name %q, lease %v, queue timeout %v: TryAcquire: %v", name, time.Duration(leaseTime), time.Duration(queueTimeout), err)
		}
		if err := ls.Release(ctx); err != nil && !errors.Is(err, lease.ErrNotHeld) {
			t.Fatalf("name %q: Release: %v", name, err)
		}
		if _, err := l.ForceRelease(ctx); err != nil {
			t.Fatalf("name %q: ForceRelease: %v", name, err)
		}
	})
}

// minLease is the shortest lease leasehold accepts (WithWatchdog, WithLeaseTime).
const minLease = 10 * time.Millisecond
