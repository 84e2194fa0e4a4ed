package rlock_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/rlock"
)

func openB(b *testing.B, srv *redistest.Server) *leasehold.Client {
	c, err := leasehold.Open(srv.Option())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// Uncontended acquire + release of one lock: each is one script, one round
// trip; roundtrips/op counts them on the client side.
func BenchmarkAcquireRelease(b *testing.B) {
	srv := redistest.Start(b)
	rc, err := rueidis.NewClient(srv.Option())
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	counted := redistest.NewCounting(rc)
	c, err := leasehold.New(counted)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	l := rlock.New(c, "bench")
	ctx := context.Background()
	warm, err := l.Acquire(ctx) // load the scripts
	if err != nil {
		b.Fatal(err)
	}
	_ = warm.Release(ctx)
	before := counted.Rounds()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ls, err := l.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := ls.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(counted.Rounds()-before)/float64(b.N), "roundtrips/op")
}

// Wake-up latency: from the holder's Release to the waiter's Acquire
// returning, with the waiter on another Client asleep on its subscription
// (the lease is 30s, so no timer is involved).
func BenchmarkWakeup(b *testing.B) {
	srv := redistest.Start(b)
	holder, waiter := openB(b, srv), openB(b, srv)
	lh, lw := rlock.New(holder, "wake"), rlock.New(waiter, "wake")
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		held, err := lh.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		f := lw.AcquireAsync(ctx)
		for waiter.Stats().Waiters != 1 {
			time.Sleep(50 * time.Microsecond)
		}
		time.Sleep(time.Millisecond) // let it settle into its wait after the subscription
		b.StartTimer()
		start := time.Now()
		if err := held.Release(ctx); err != nil {
			b.Fatal(err)
		}
		got, err := f.Result()
		lat = append(lat, time.Since(start))
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		_ = got.Release(ctx)
		b.StartTimer()
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
