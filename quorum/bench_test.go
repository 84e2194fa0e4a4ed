package quorum_test

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/quorum"
	"github.com/leasehold/leasehold/rlock"
)

// BenchmarkRedLockVsRLock times one acquire+release of a RedLock over five
// redis-servers against one of a single rlock on the first of them. Each
// iteration runs both, one after the other, so that both see the same load
// (the machine is shared): ns/op is their sum, rlock-ns and redlock5-ns each
// one's mean, ratio = redlock5-ns / rlock-ns.
func BenchmarkRedLockVsRLock(b *testing.B) {
	_, cs := cluster(b, 5)
	ctx := context.Background()
	single := rlock.New(cs[0], "bench-rlock")
	rl := quorum.RedLock(members(cs, "bench-redlock")...)
	cycle := func(acquire func(context.Context) (*lease.Lease, error)) time.Duration {
		start := time.Now()
		ls, err := acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := ls.Release(ctx); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	// Warm both up: connections, scripts loaded.
	cycle(single.Acquire)
	cycle(rl.Acquire)
	var one, five time.Duration
	for b.Loop() {
		one += cycle(single.Acquire)
		five += cycle(rl.Acquire)
	}
	n := float64(b.N)
	b.ReportMetric(float64(one.Nanoseconds())/n, "rlock-ns")
	b.ReportMetric(float64(five.Nanoseconds())/n, "redlock5-ns")
	b.ReportMetric(float64(five)/float64(one), "ratio")
}
