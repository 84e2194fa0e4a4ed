package leasehold_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/rlock"
)

// trackedKeys is the number of keys in srv's tracking table (INFO stats,
// tracking_total_keys): the keys some connection read with CLIENT TRACKING
// and that were not written since.
func trackedKeys(tb testing.TB, srv *redistest.Server) int64 {
	tb.Helper()
	info, err := srv.Do("INFO", "stats").ToString()
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range splitLines(info) {
		if v, ok := strings.CutPrefix(line, "tracking_total_keys:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return n
		}
	}
	tb.Fatal("INFO stats has no tracking_total_keys")
	return 0
}

// Redis keeps a tracking entry for a key read with tracking until the key is
// written again, and lock names are often used once (an order id, a file):
// every name held longer than the guard's delay before its first read used
// to leave one behind, read after its own release (1,264 of 3,000 names in
// this test, about 160 bytes each, for as long as the server runs). Here
// 3,000 names, each held 8ms by one of 8 workers (longer than the guard's
// 5ms delay, so each hold's key is read with tracking), one in six with a
// waiter on another Client that gives up before the release, on Clients of
// every kind: once every key is gone, at most 1% of the names may be left in
// the tracking table.
func TestNoTrackingResidue(t *testing.T) {
	const (
		names   = 3000
		workers = 8
		hold    = 8 * time.Millisecond
	)
	srv := redistest.Start(t)
	// A short watchdog so that the fencing counters expire soon after the
	// last hold; the holds are too short to be renewed.
	opts := []leasehold.Option{leasehold.WithWatchdog(time.Second)}
	noCache := srv.Option()
	noCache.DisableCache = true
	cached, err := rueidis.NewClient(srv.Option())
	if err != nil {
		t.Fatal(err)
	}
	defer cached.Close()
	byNew, err := leasehold.New(cached, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer byNew.Close()
	holders := []*leasehold.Client{locktest.Open(t, srv, opts...), locktest.OpenAt(t, noCache, opts...), byNew}
	waiters := locktest.Open(t, srv, opts...)

	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := holders[w%len(holders)]
			for {
				i := next.Add(1) - 1
				if i >= names {
					return
				}
				name := fmt.Sprint("residue:", i)
				if err := holdOnce(c, waiters, name, hold, i%6 == 0); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Idle: every lock key released, the fencing counters expired (a
	// second after their last draw).
	locktest.Eventually(t, 10*time.Second, "keys left on the server", func() bool {
		n, err := srv.Do("DBSIZE").AsInt64()
		return err == nil && n == 0
	})
	left := trackedKeys(t, srv)
	t.Logf("tracking_total_keys after %d names went idle: %d", names, left)
	if left > names/100 {
		t.Fatalf("%d keys left in the tracking table after %d names went idle, want at most %d", left, names, names/100)
	}
}

// holdOnce takes name on c, holds it for d, and releases it; with a waiter,
// another Client waits for name meanwhile and gives up before the release.
func holdOnce(c, waiters *leasehold.Client, name string, d time.Duration, waiter bool) error {
	ctx := context.Background()
	l, err := rlock.New(c, name).Acquire(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	if waiter {
		wctx, cancel := context.WithTimeout(ctx, d/2)
		if _, err := rlock.New(waiters, name).Acquire(wctx); err == nil {
			cancel()
			return fmt.Errorf("the waiter took %s while it was held", name)
		}
		cancel()
	}
	time.Sleep(d - time.Since(start))
	return l.Release(ctx)
}
