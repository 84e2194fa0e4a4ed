package rw_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rw"
)

// ranOut reports the refusal of an acquisition whose lease, a few
// milliseconds long, ran out before the acquisition returned, as it may on a
// loaded machine: not bad input, but no lease.
func ranOut(err error, ttl time.Duration) bool {
	return ttl > 0 && ttl < 100*time.Millisecond && errors.Is(err, lease.ErrNotAcquired) && errors.Is(err, lease.ErrLost)
}

// Read-write lock names, lease times and modes from the fuzzer (the seeds
// run with the tests; go test -fuzz FuzzRWLock ./rw explores): nothing
// panics, bad input is refused with an error wrapping lease.ErrInvalid, and
// any other input takes a read and a write, one after the other, and gives
// them back.
func FuzzRWLock(f *testing.F) {
	srv := redistest.Start(f)
	rc := srv.Client()
	c, err := leasehold.New(rc)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { c.Close() })
	f.Add("catalog", int64(0), false)
	f.Add("", int64(time.Second), true)
	f.Add("{tag}:x", int64(time.Second), true)
	f.Add("a{b", int64(-1), false)
	f.Add("x}y:rwlock_timeout", int64(1), true)
	f.Add("é-名-🔒", int64(minLease), false)
	f.Add("short", int64(minLease-1), true)
	f.Add(strings.Repeat("r", 1<<16), int64(math.MaxInt64), true)
	f.Add("nul\x00byte", int64(math.MinInt64), false)
	f.Fuzz(func(t *testing.T, name string, leaseTime int64, writerPreference bool) {
		var opts []leasehold.LockOption
		if leaseTime != 0 {
			opts = append(opts, leasehold.WithLeaseTime(time.Duration(leaseTime)))
		}
		if writerPreference {
			opts = append(opts, leasehold.WithWriterPreference())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		l := rw.New(c, name, opts...)
		invalid := name == "" || (leaseTime != 0 && leaseTime < int64(minLease))
		for _, side := range []lease.Locker{l.Read(), l.Write()} {
			ls, err := side.TryAcquire(ctx)
			if invalid {
				if !errors.Is(err, lease.ErrInvalid) {
					t.Fatalf("name %q, lease %v: TryAcquire = %v, want ErrInvalid", name, time.Duration(leaseTime), err)
				}
				continue
			}
			if ranOut(err, time.Duration(leaseTime)) {
				continue
			}
			if err != nil {
				h, _ := rc.Do(ctx, rc.B().Hgetall().Key(name).Build()).AsStrMap()
				ttl, _ := rc.Do(ctx, rc.B().Pttl().Key(name).Build()).AsInt64()
				t.Fatalf("name %q, lease %v, %T: TryAcquire: %v (the lock: %v, pttl %dms)", name, time.Duration(leaseTime), side, err, h, ttl)
			}
			if err := ls.Release(ctx); err != nil && !errors.Is(err, lease.ErrNotHeld) {
				t.Fatalf("name %q: Release: %v", name, err)
			}
			if _, err := l.ForceRelease(ctx); err != nil {
				t.Fatalf("name %q: ForceRelease: %v", name, err)
			}
		}
	})
}

// minLease is the shortest lease leasehold accepts (WithWatchdog, WithLeaseTime).
const minLease = 10 * time.Millisecond
