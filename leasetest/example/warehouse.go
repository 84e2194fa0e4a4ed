// Command warehouse is a small service on leasehold's locks, written as a
// user's would be: each kind of lock has a job in it, and its tests
// (warehouse_test.go) run on the test kit, leasetest, with no redis-server.
//
//	REDIS_ADDR=127.0.0.1:6379 go run .
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/election"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/quorum"
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/rw"
	"github.com/leasehold/leasehold/semaphore"
)

// ErrOutOfStock is Reserve's answer when there is not enough left.
var ErrOutOfStock = errors.New("out of stock")

// Packers is how many packers the warehouse has, across every process.
const Packers = 4

// Store is what the locks guard: stock and prices, shared by every process
// (a database in a real service). It refuses a write carrying a fencing
// token lower than one it has seen for the same key.
type Store struct {
	mu     sync.Mutex
	stock  map[string]int
	prices map[string]int
	tokens map[string]uint64
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{stock: map[string]int{}, prices: map[string]int{}, tokens: map[string]uint64{}}
}

// Stock is how many of sku are left.
func (s *Store) Stock(sku string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stock[sku]
}

// SetStock writes n for sku under token, unless a later token wrote first.
func (s *Store) SetStock(sku string, n int, token uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.tokens[sku] {
		return fmt.Errorf("stock of %s: token %d is stale (seen %d)", sku, token, s.tokens[sku])
	}
	s.tokens[sku], s.stock[sku] = token, n
	return nil
}

// Price is the price of sku.
func (s *Store) Price(sku string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prices[sku]
}

// SetPrice sets the price of sku.
func (s *Store) SetPrice(sku string, p int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prices[sku] = p
}

// Warehouse is one process of the warehouse service.
type Warehouse struct {
	c     *leasehold.Client
	store *Store
}

// New returns the warehouse process on c and store, with its packers set
// up (once for every process).
func New(ctx context.Context, c *leasehold.Client, store *Store) (*Warehouse, error) {
	if _, err := semaphore.New(c, "packers").TrySetPermits(ctx, Packers); err != nil {
		return nil, err
	}
	return &Warehouse{c: c, store: store}, nil
}

// Reserve takes n of sku out of stock: one process at a time per sku
// (rlock), its write fenced by the lease's token.
func (w *Warehouse) Reserve(ctx context.Context, sku string, n int) error {
	return lease.Do(ctx, rlock.New(w.c, "stock:"+sku), func(ctx context.Context) error {
		left := w.store.Stock(sku)
		if left < n {
			return ErrOutOfStock
		}
		return w.store.SetStock(sku, left-n, lease.FromContext(ctx).Token())
	})
}

// Move moves n of stock from one sku to another, holding both at once
// (quorum.Multi): two moves in opposite directions do not deadlock.
func (w *Warehouse) Move(ctx context.Context, from, to string, n int) error {
	l, err := quorum.Multi(rlock.New(w.c, "stock:"+from), rlock.New(w.c, "stock:"+to)).Acquire(ctx)
	if err != nil {
		return err
	}
	defer l.Release(context.Background())
	if w.store.Stock(from) < n {
		return ErrOutOfStock
	}
	if err := w.store.SetStock(from, w.store.Stock(from)-n, l.Token()); err != nil {
		return err
	}
	return w.store.SetStock(to, w.store.Stock(to)+n, l.Token())
}

// Prices reads prices under the price list's read lock (rw): readers share
// it, and none sees a list half written.
func (w *Warehouse) Prices(ctx context.Context, skus ...string) (map[string]int, error) {
	prices := map[string]int{}
	err := lease.Do(ctx, rw.New(w.c, "prices").Read(), func(context.Context) error {
		for _, sku := range skus {
			prices[sku] = w.store.Price(sku)
		}
		return nil
	})
	return prices, err
}

// SetPrices writes prices, one by one, under the write lock.
func (w *Warehouse) SetPrices(ctx context.Context, prices map[string]int) error {
	return lease.Do(ctx, rw.New(w.c, "prices").Write(), func(context.Context) error {
		for sku, p := range prices {
			w.store.SetPrice(sku, p)
		}
		return nil
	})
}

// Pack runs pack with as many packers as the order has parcels, at most
// Packers across every process (semaphore).
func (w *Warehouse) Pack(ctx context.Context, parcels int, pack func(ctx context.Context) error) error {
	return lease.Do(ctx, semaphore.New(w.c, "packers").Weighted(parcels), pack)
}

// Unload runs unload when the dock is free, trucks served in the order they
// came (fairqueue).
func (w *Warehouse) Unload(ctx context.Context, unload func(ctx context.Context) error) error {
	return lease.Do(ctx, fairqueue.New(w.c, "dock"), unload)
}

// Schedule runs the nightly scheduler in one process at a time (election):
// run runs while this process leads, until ctx ends.
func (w *Warehouse) Schedule(ctx context.Context, id string, run func(ctx context.Context) error) error {
	return election.New(w.c, "scheduler").Lead(ctx, id, run)
}

// Stocktake runs count under a RedLock over the Clients of independent
// Redis servers, one per server: it holds while most of them are up.
func Stocktake(ctx context.Context, nodes []*leasehold.Client, count func(ctx context.Context) error) error {
	var ls []lease.Locker
	for _, c := range nodes {
		ls = append(ls, rlock.New(c, "stocktake"))
	}
	return lease.Do(ctx, quorum.RedLock(ls...), count)
}

func main() {
	if err := run(cmp.Or(os.Getenv("REDIS_ADDR"), "localhost:6379")); err != nil {
		log.Fatal(err)
	}
}

func run(addr string) error {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := NewStore()
	w, err := New(ctx, c, store)
	if err != nil {
		return err
	}
	if err := store.SetStock("bolt", 10, 0); err != nil {
		return err
	}
	if err := w.Reserve(ctx, "bolt", 3); err != nil {
		return err
	}
	if err := w.Move(ctx, "bolt", "nut", 2); err != nil {
		return err
	}
	if err := w.SetPrices(ctx, map[string]int{"bolt": 12}); err != nil {
		return err
	}
	prices, err := w.Prices(ctx, "bolt")
	if err != nil {
		return err
	}
	fmt.Printf("bolts left %d, nuts %d, a bolt costs %d\n", store.Stock("bolt"), store.Stock("nut"), prices["bolt"])
	return nil
}
