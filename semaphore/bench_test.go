package semaphore_test

import (
	"context"
	"flag"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/semaphore"
)

// lockers are what the benchmarks compare: one permit of a semaphore of n,
// and the reentrant lock, which is a semaphore of one in effect.
func lockers(b *testing.B, c *leasehold.Client, name string, n int) map[string]lease.Locker {
	s := semaphore.New(c, name+"-sem")
	if _, err := s.TrySetPermits(context.Background(), n); err != nil {
		b.Fatal(err)
	}
	return map[string]lease.Locker{"semaphore": s, "rlock": rlock.New(c, name+"-lock")}
}

// Uncontended acquire + release of one permit, against the same with an
// rlock: each is one script, one round trip.
//
//	go test -run '^$' -bench AcquireRelease -count 5 ./semaphore
func BenchmarkAcquireRelease(b *testing.B) {
	for _, kind := range []string{"semaphore", "rlock"} {
		b.Run(kind, func(b *testing.B) {
			srv := redistest.Start(b)
			c, cr := untracked(b, srv)
			l := lockers(b, c, "bench", 4)[kind]
			ctx := context.Background()
			warm, err := l.Acquire(ctx) // load the scripts
			if err != nil {
				b.Fatal(err)
			}
			_ = warm.Release(ctx)
			before := cr.Rounds()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				ls, err := l.Acquire(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := ls.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cr.Rounds()-before)/float64(b.N), "roundtrips/op")
		})
	}
}

var holdFor = flag.Duration("contended.hold", 250*time.Microsecond, "work inside each lease in BenchmarkContendedHandoff")

// Contended handoff: 64 goroutines on one name, each holding its lease for
// -contended.hold, with N permits (an rlock for N = 1 alongside). As in the
// root package's BenchmarkContended, each acquisition is a handoff to a
// goroutine that was waiting, woken by a release (locktest.Handoffs):
// handoffs/s is about N/(hold + handoff latency).
//
//	go test -run '^$' -bench ContendedHandoff -count 5 ./semaphore
func BenchmarkContendedHandoff(b *testing.B) {
	for _, tc := range []struct {
		name string
		kind string
		n    int
	}{
		{"rlock", "rlock", 1},
		{"permits=1", "semaphore", 1},
		{"permits=4", "semaphore", 4},
		{"permits=16", "semaphore", 16},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srv := redistest.Start(b)
			c, cr := untracked(b, srv)
			l := lockers(b, c, "contended", tc.n)[tc.kind]
			rounds := cr.Rounds()
			b.ResetTimer()
			elapsed := locktest.Handoffs(b, 64, b.N, *holdFor, func(ctx context.Context) (func(), error) {
				ls, err := l.Acquire(ctx)
				if err != nil {
					return nil, err
				}
				return func() { _ = ls.Release(context.Background()) }, nil
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "handoffs/s")
			b.ReportMetric(float64(cr.Rounds()-rounds)/float64(b.N), "roundtrips/handoff")
		})
	}
}
