package quorum_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/quorum"
	"github.com/leasehold/leasehold/rlock"
)

// Multi and RedLock built from the fuzzer's member counts, repeated members
// and Configs (the seeds run with the tests; go test -fuzz FuzzQuorum ./quorum
// explores): nothing panics, bad input (no members, one member twice, a
// negative duration, a clock drift outside [0, 1) or not a number) is refused
// with an error wrapping lease.ErrInvalid, and any other input takes the
// quorum and gives it back. Each member has a Client of its own, as a
// RedLock's must.
func FuzzQuorum(f *testing.F) {
	srv := redistest.Start(f)
	var cs [8]*leasehold.Client
	for i := range cs {
		c, err := leasehold.New(srv.Client())
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { c.Close() })
		cs[i] = c
	}
	f.Add(uint8(3), uint8(0), false, int64(0), 0.0, int64(0), int64(0))
	f.Add(uint8(0), uint8(0), true, int64(0), 0.0, int64(0), int64(0))
	f.Add(uint8(5), uint8(1), true, int64(time.Second), 0.5, int64(time.Millisecond), int64(time.Millisecond))
	f.Add(uint8(2), uint8(0), false, int64(-1), 0.0, int64(0), int64(0))
	f.Add(uint8(3), uint8(0), true, int64(0), math.NaN(), int64(0), int64(0))
	f.Add(uint8(3), uint8(0), true, int64(0), math.Inf(1), int64(0), int64(0))
	f.Add(uint8(3), uint8(0), false, int64(0), 0.999999, int64(math.MaxInt64), int64(math.MaxInt64))
	f.Add(uint8(1), uint8(0), true, int64(1), math.Copysign(0, -1), int64(-1), int64(-1)) // negative zero (a -0.0 literal is +0)
	f.Fuzz(func(t *testing.T, n, dup uint8, redlock bool, nodeTimeout int64, drift float64, margin, retry int64) {
		n %= 8
		cfg := quorum.Config{
			NodeTimeout: time.Duration(nodeTimeout),
			ClockDrift:  drift,
			DriftMargin: time.Duration(margin),
			RetryDelay:  time.Duration(retry),
		}
		ms := make([]lease.Locker, n)
		for i := range ms {
			ms[i] = rlock.New(cs[i], "member-"+string(rune('a'+i)))
		}
		dupOK := dup > 0 && int(dup) < len(ms)
		if dupOK {
			ms[dup] = ms[0] // the same locker twice
		}
		var l lease.Locker
		if redlock {
			l = quorum.RedLockWith(cfg, ms...)
		} else {
			l = quorum.MultiWith(cfg, ms...)
		}
		invalid := n == 0 || dupOK || nodeTimeout < 0 || margin < 0 || retry < 0 ||
			!(drift >= 0 && drift < 1)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ls, err := l.TryAcquire(ctx)
		if invalid {
			if !errors.Is(err, lease.ErrInvalid) {
				t.Fatalf("%d members (dup %d), %+v: TryAcquire = %v, want ErrInvalid", n, dup, cfg, err)
			}
			return
		}
		if err != nil {
			// A drift near 1, or a tiny node timeout, can leave no validity
			// or no time to answer: a refusal, not bad input.
			if errors.Is(err, lease.ErrNotAcquired) {
				return
			}
			t.Fatalf("%d members, %+v: TryAcquire: %v", n, cfg, err)
		}
		if err := ls.Release(ctx); err != nil && !errors.Is(err, lease.ErrNotHeld) {
			t.Fatalf("%d members, %+v: Release: %v", n, cfg, err)
		}
	})
}
