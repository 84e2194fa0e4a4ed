package rlock_test

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
	"github.com/leasehold/leasehold/rlock"
)

// ranOut reports the refusal of an acquisition whose lease, a few
// milliseconds long (0: the default 30s), ran out before the acquisition
// returned, as it may on a loaded machine: not bad input, but no lease.
func ranOut(err error, ttl time.Duration) bool {
	return ttl > 0 && ttl < 100*time.Millisecond && errors.Is(err, lease.ErrNotAcquired) && errors.Is(err, lease.ErrLost)
}

// Lock names, lease times, watchdogs and hold-at-least times from the fuzzer
// (the seeds run with the tests; go test -fuzz FuzzLock ./rlock explores):
// nothing panics, bad input (an empty name, a duration under minLease, a
// hold-at-least not positive) is refused with
// an error wrapping lease.ErrInvalid, and any other input takes the lock and
// gives it back (or, for a lease of a few milliseconds, may report it ran
// out before it was handed out). Names are binary-safe: braces, unicode, invalid UTF-8, NUL
// bytes and 64 KiB names are all locks. Before the fuzzer, a watchdog of a
// few nanoseconds made the keeper panic (a ticker of d/3 = 0).
func FuzzLock(f *testing.F) {
	srv := redistest.Start(f)
	rc := srv.Client()
	f.Add("orders", int64(0), int64(30*time.Second), int64(0))
	f.Add("", int64(0), int64(0), int64(time.Second))
	f.Add("{tag}:x", int64(time.Second), int64(time.Second), int64(time.Minute))
	f.Add("a{b", int64(-1), int64(1), int64(-1))
	f.Add("x}y", int64(1), int64(2), int64(1))
	f.Add("a{}b", int64(minLease-1), int64(minLease), int64(0))
	f.Add("é-名-🔒", int64(minLease), int64(3), int64(math.MaxInt64))
	f.Add(strings.Repeat("k", 1<<16), int64(time.Hour), int64(math.MaxInt64), int64(math.MinInt64))
	f.Add("nul\x00byte", int64(math.MinInt64), int64(math.MinInt64), int64(0))
	f.Add("\xff\xfe not utf-8", int64(math.MaxInt64), int64(-time.Second), int64(time.Millisecond))
	f.Add("kept", int64(0), int64(0), int64(math.MaxInt64))
	f.Add("kept-fixed", int64(minLease), int64(0), int64(time.Hour))
	f.Add("not-kept", int64(0), int64(0), int64(-time.Hour))
	f.Fuzz(func(t *testing.T, name string, leaseTime, watchdog, hold int64) {
		var opts []leasehold.Option
		if watchdog != 0 {
			opts = append(opts, leasehold.WithWatchdog(time.Duration(watchdog)))
		}
		c, err := leasehold.New(rc, opts...)
		if watchdog != 0 && watchdog < int64(minLease) {
			if !errors.Is(err, lease.ErrInvalid) {
				t.Fatalf("watchdog %v: New = %v, want ErrInvalid", time.Duration(watchdog), err)
			}
			return
		}
		if err != nil {
			t.Fatalf("watchdog %v: %v", time.Duration(watchdog), err)
		}
		defer c.Close()
		var lopts []leasehold.LockOption
		if leaseTime != 0 {
			lopts = append(lopts, leasehold.WithLeaseTime(time.Duration(leaseTime)))
		}
		if hold != 0 {
			lopts = append(lopts, leasehold.WithHoldAtLeast(time.Duration(hold)))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		l := rlock.New(c, name, lopts...)
		ls, err := l.TryAcquire(ctx)
		if name == "" || (leaseTime != 0 && leaseTime < int64(minLease)) || hold < 0 {
			if !errors.Is(err, lease.ErrInvalid) {
				t.Fatalf("name %q, lease %v, hold %v: TryAcquire = %v, want ErrInvalid", name, time.Duration(leaseTime),
					time.Duration(hold), err)
			}
			return
		}
		ttl := time.Duration(leaseTime)
		if ttl == 0 {
			ttl = time.Duration(watchdog)
		}
		if err != nil && !ranOut(err, ttl) {
			t.Fatalf("name %q, lease %v: TryAcquire: %v", name, time.Duration(leaseTime), err)
		}
		if err != nil {
			return
		}
		// A lease of a few ms may run out first: then Release says so.
		err = ls.Release(ctx)
		if err != nil && !errors.Is(err, lease.ErrNotHeld) {
			t.Fatalf("name %q: Release: %v", name, err)
		}
		// A hold-at-least of more than a moment keeps a released lock.
		if err == nil && hold > int64(time.Second) {
			if n, err := rc.Do(ctx, rc.B().Exists().Key(name).Build()).AsInt64(); err != nil || n != 1 {
				t.Fatalf("name %q, hold %v: EXISTS after an early release = %v, %v; want the lock kept", name, time.Duration(hold), n, err)
			}
		}
		// Whatever is left (a lost lease's key) must not block the next input.
		if _, err := l.ForceRelease(ctx); err != nil {
			t.Fatalf("name %q: ForceRelease: %v", name, err)
		}
	})
}

// minLease is the shortest lease leasehold accepts (WithWatchdog, WithLeaseTime).
const minLease = 10 * time.Millisecond
