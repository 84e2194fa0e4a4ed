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
// written again, and lock names are often used once (an order id, a file): a
// read after a name's last write leaves an entry (about 160 bytes) for as
// long as the server runs. Here 3,000 names, each held 8ms by one of 8
// workers (longer than the guard's 5ms delay, so each hold's key is read
// with tracking) on Clients of every kind; one in six with a waiter on
// another Client that gives up at 4ms, before the read of its key is due.
//
// A hold's key is never read once its release has begun (the release waits
// for a read in flight), whatever the load: not one name without a waiter
// may stay tracked once idle. 1,264 of them did, read after their own
// release. A waiter's key is not read once its last waiter has left; read
// anyway, 66 to 115 of the 500 waiters' names stayed tracked on a busy
// machine, the read coming after the holder's release. A read the guard had
// taken before its waiter left can still land after another Client's
// release, which nothing orders: those names are written once more here,
// which clears them, before the count, and their number is only logged.
// internal/core's and internal/hub's tests pin that a key whose last waiter
// left is not read.
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
	waited := func(i int64) bool { return i%6 == 0 }

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
				if err := holdOnce(c, waiters, fmt.Sprint("residue:", i), hold, waited(i)); err != nil {
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
	all := trackedKeys(t, srv)
	// A write of a tracked key ends its entry: the waiters' names written
	// (and deleted), what is left is the holds' residue.
	for i := int64(0); i < names; i++ {
		if waited(i) {
			name := fmt.Sprint("residue:", i)
			if err := srv.Do("SET", name, "x").Error(); err != nil {
				t.Fatal(err)
			}
			if err := srv.Do("DEL", name).Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
	left := trackedKeys(t, srv)
	t.Logf("tracking_total_keys after %d names went idle: %d, of which %d of the waiters' names", names, all, all-left)
	if left != 0 {
		t.Fatalf("%d keys of names without a waiter left in the tracking table after %d names went idle, want 0", left, names)
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
