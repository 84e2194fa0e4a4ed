package main

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/leasetest"
)

// processes starts a Redis for the test and n warehouse processes on it,
// sharing one store.
func processes(t *testing.T, n int) ([]*Warehouse, *Store) {
	t.Helper()
	srv := leasetest.NewServer(t)
	store := NewStore()
	var ws []*Warehouse
	for range n {
		w, err := New(context.Background(), srv.Open(), store)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	return ws, store
}

func timeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Three processes reserving at once never sell more than there is.
func TestReserveNeverOversells(t *testing.T) {
	ws, store := processes(t, 3)
	if err := store.SetStock("bolt", 20, 0); err != nil {
		t.Fatal(err)
	}
	var sold atomic.Int32
	var wg sync.WaitGroup
	for _, w := range ws {
		for range 10 {
			wg.Go(func() {
				switch err := w.Reserve(timeout(t), "bolt", 1); {
				case err == nil:
					sold.Add(1)
				case !errors.Is(err, ErrOutOfStock):
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	if sold.Load() != 20 || store.Stock("bolt") != 0 {
		t.Fatalf("sold %d, %d left; want 20 sold, none left", sold.Load(), store.Stock("bolt"))
	}
}

// Moves in both directions at once neither deadlock nor lose stock.
func TestMovesKeepTheTotal(t *testing.T) {
	ws, store := processes(t, 2)
	_ = store.SetStock("bolt", 50, 0)
	_ = store.SetStock("nut", 50, 0)
	var wg sync.WaitGroup
	for i, w := range ws {
		from, to := "bolt", "nut"
		if i == 1 {
			from, to = to, from
		}
		wg.Go(func() {
			for range 10 {
				if err := w.Move(timeout(t), from, to, 1); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if total := store.Stock("bolt") + store.Stock("nut"); total != 100 {
		t.Fatalf("%d in stock after the moves, want 100", total)
	}
}

// A reader never sees a price list half written, though the store takes
// the prices one by one.
func TestPricesWrittenWhole(t *testing.T) {
	ws, _ := processes(t, 2)
	ctx := timeout(t)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(done)
		for i := 1; i <= 20; i++ {
			if err := ws[0].SetPrices(ctx, map[string]int{"bolt": i, "nut": i}); err != nil {
				t.Error(err)
			}
		}
	})
	reads := 0
	wg.Go(func() {
		for {
			p, err := ws[1].Prices(ctx, "bolt", "nut")
			if err != nil {
				t.Error(err)
				return
			}
			if p["bolt"] != p["nut"] {
				t.Errorf("prices read half written: %v", p)
			}
			reads++
			select {
			case <-done:
				return
			default:
			}
		}
	})
	wg.Wait()
	if p, err := ws[1].Prices(ctx, "bolt"); p["bolt"] != 20 || err != nil || reads == 0 {
		t.Fatalf("Prices = %v, %v after %d reads; want the last written, 20", p, err, reads)
	}
}

// Packing never uses more packers than there are, across processes, and
// a big order waits for enough of them.
func TestPackersBound(t *testing.T) {
	ws, _ := processes(t, 3)
	var busy, most atomic.Int32
	var wg sync.WaitGroup
	for i, w := range ws {
		for j := range 4 {
			parcels := 1 + (i+j)%3
			wg.Go(func() {
				err := w.Pack(timeout(t), parcels, func(context.Context) error {
					n := busy.Add(int32(parcels))
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					time.Sleep(10 * time.Millisecond)
					busy.Add(-int32(parcels))
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	if m := most.Load(); m > Packers || m < 2 {
		t.Fatalf("at most %d packers busy at once, want 2 to %d", m, Packers)
	}
}

// One truck at the dock at a time.
func TestDockOneAtATime(t *testing.T) {
	ws, _ := processes(t, 3)
	var inside atomic.Int32
	var wg sync.WaitGroup
	for _, w := range ws {
		for range 3 {
			wg.Go(func() {
				err := w.Unload(timeout(t), func(context.Context) error {
					if n := inside.Add(1); n != 1 {
						t.Errorf("%d trucks at the dock", n)
					}
					time.Sleep(5 * time.Millisecond)
					inside.Add(-1)
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
}

// One scheduler runs at a time; when it stops, another takes over at once.
func TestSchedulerHandsOver(t *testing.T) {
	ws, _ := processes(t, 2)
	leading := make(chan string, 2)
	stop := map[string]context.CancelFunc{}
	errs := make(chan error, 2)
	for i, w := range ws {
		id := []string{"a", "b"}[i]
		ctx, cancel := context.WithCancel(timeout(t))
		stop[id] = cancel
		go func() {
			errs <- w.Schedule(ctx, id, func(ctx context.Context) error {
				leading <- id
				<-ctx.Done()
				return nil
			})
		}()
	}
	first := <-leading
	select {
	case other := <-leading:
		t.Fatalf("%s leads while %s does", other, first)
	case <-time.After(100 * time.Millisecond):
	}
	stop[first]()
	select {
	case <-leading:
	case <-time.After(5 * time.Second):
		t.Fatal("no scheduler took over within 5s")
	}
	for _, cancel := range stop {
		cancel()
	}
	for range 2 {
		if err := <-errs; err != nil && !errors.Is(err, context.Canceled) {
			t.Error(err)
		}
	}
}

// A stocktake runs in one process at a time over three Redis servers.
func TestStocktakeOverThreeServers(t *testing.T) {
	servers := []*leasetest.Server{leasetest.NewServer(t), leasetest.NewServer(t), leasetest.NewServer(t)}
	process := func() []*leasehold.Client {
		var cs []*leasehold.Client
		for _, s := range servers {
			cs = append(cs, s.Open())
		}
		return cs
	}
	var inside, runs atomic.Int32
	var wg sync.WaitGroup
	for _, nodes := range [][]*leasehold.Client{process(), process()} {
		wg.Go(func() {
			for range 3 {
				err := Stocktake(timeout(t), nodes, func(context.Context) error {
					if n := inside.Add(1); n != 1 {
						t.Errorf("%d stocktakes at once", n)
					}
					runs.Add(1)
					time.Sleep(5 * time.Millisecond)
					inside.Add(-1)
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if runs.Load() != 6 {
		t.Fatalf("%d stocktakes, want 6", runs.Load())
	}
}
