package bench_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
)

// TestRunners puts every runner, the kinds and variants included (CI's
// benchmark run leaves those out), through what the scenarios ask of it: a
// lock and its release, then handoffs among 16 goroutines on one lock. A
// runner that missed a wake-up would wait out the holder's 30s lease and
// fail the 20s bound.
func TestRunners(t *testing.T) {
	srv := redistest.Start(t)
	for _, m := range slices.Concat(libraries, kinds, variants) {
		t.Run(m.name, func(t *testing.T) {
			srv.Do("FLUSHALL")
			lib := m.make(t, srv.Addr(), 30*time.Second)
			defer lib.close()
			ctx := context.Background()
			unlock, err := lib.lock(ctx, "runner")
			if err != nil {
				t.Fatal(err)
			}
			unlock()
			// Released: taken again at once, by a new holder.
			tctx, cancel := context.WithTimeout(ctx, time.Second)
			unlock, err = lib.lock(tctx, "runner")
			cancel()
			if err != nil {
				t.Fatalf("not free after its release: %v", err)
			}
			unlock()
			if m.shared {
				return
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				locktest.Handoffs(t, 16, 40, 0, func(ctx context.Context) (func(), error) {
					return lib.lock(ctx, "runner-contended")
				})
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("40 handoffs among 16 goroutines took over 20s")
			}
		})
	}
}

// The redisson runner's watchdog keeps a lock whose lease is shorter than
// the test alive, and its release stops that.
func TestRedissonWatchdog(t *testing.T) {
	srv := redistest.Start(t)
	const ttl = 300 * time.Millisecond
	lib := newRedisson(t, srv.Addr(), ttl)
	defer lib.close()
	unlock, err := lib.renewing(context.Background(), "renewed")
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(4 * ttl); time.Now().Before(end); time.Sleep(ttl / 10) {
		if ms, _ := srv.Do("PTTL", "renewed").AsInt64(); ms <= 0 {
			t.Fatalf("the renewed lock's pttl is %d", ms)
		}
	}
	unlock()
	if n, _ := srv.Do("EXISTS", "renewed").AsInt64(); n != 0 {
		t.Fatal("the lock is still there after its release")
	}
}

// The across-processes scenario's mixed run, a redisson runner beside two
// leasehold Clients, hands the lock among them and reports who got it: every
// process's share, shares that add up to all the acquisitions, the smallest
// over an even one, and a longest wait. (How even the shares are is
// rlock's TestTurnShares' to bound; here every process need only get the
// lock once.)
func TestContendedClientsReport(t *testing.T) {
	srv := redistest.Start(t)
	procs := []libMaker{{name: "redisson", make: newRedisson}, {name: "leasehold", make: newLeasehold}, {name: "leasehold", make: newLeasehold}}
	r := testing.Benchmark(func(b *testing.B) { contendedClients(b, srv, procs) })
	if r.N == 0 {
		t.Fatal("the scenario failed")
	}
	var sum, least float64 = 0, 1
	for i := range procs {
		share, ok := r.Extra[fmt.Sprintf("share-p%d", i+1)]
		if !ok || share <= 0 {
			t.Errorf("process %d: share %v (reported: %v), want one above 0 (%d handoffs)", i+1, share, ok, r.N)
		}
		sum, least = sum+share, min(least, share)
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("the shares add up to %v, want 1", sum)
	}
	if got := r.Extra["min-share/even"]; math.Abs(got-least*3) > 1e-9 {
		t.Errorf("min-share/even %v, want %v", got, least*3)
	}
	if r.Extra["max-wait-µs"] <= 0 || r.Extra["handoffs/s"] <= 0 {
		t.Errorf("max-wait-µs %v, handoffs/s %v: want both above 0", r.Extra["max-wait-µs"], r.Extra["handoffs/s"])
	}
	t.Logf("%d handoffs: %v", r.N, r.Extra)
}
