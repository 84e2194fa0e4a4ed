package leasehold_test

// Benchmarks of leasehold against the Go peers, each scenario run for every
// library against the same redis-server in the same `go test -bench` run, so
// that their ratios hold on a noisy machine:
//
//	go test -run '^$' -bench . -count 5 . | tee bench.txt   # see bench.sh
//
// Peers: rueidislock (in rueidis; one key per lock, KeyMajority 1, and NOLOOP
// tracking, its fastest settings, with TryNextAfter raised from 20ms to 1s
// so that a slow reply cannot stall it), go-redsync/redsync v4 over go-redis (its
// default retry delay, 50-250ms at random, tries unbounded), and
// bsm/redislock v0.10.0 over go-redis (retrying every 100ms, as its README
// shows). redsync and redislock poll while they wait; rueidislock and
// leasehold are woken.

import (
	"context"
	"flag"
	"fmt"
	"math"
	"regexp"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/redistest"
	"github.com/leasehold/leasehold/rlock"
)

// library is one lock library under test. lock blocks until name is held
// with a lease of ttl kept alive while held (watchdog, or the caller's
// renewal), and returns its release.
type library interface {
	lock(ctx context.Context, name string) (unlock func(), err error)
	// rounds counts the round trips made so far.
	rounds() int64
	// renewing holds name and keeps it renewed until the returned release.
	renewing(ctx context.Context, name string) (unlock func(), err error)
	close()
}

type libMaker struct {
	name string
	make func(tb testing.TB, addr string, ttl time.Duration) library
}

var libraries = []libMaker{
	{"leasehold", newLeasehold},
	{"rueidislock", newRueidislock},
	{"redsync", newRedsync},
	{"redislock", newRedislock},
}

// leasehold, over a round-trip-counting rueidis client. leasehold.New
// cannot wire the invalidation hook, so waiters here are woken by unlock
// messages and TTL timers only: invalidations matter for expiries, which
// these scenarios do not have.
type leaseholdLib struct {
	c       *leasehold.Client
	counted *redistest.Counting
	locks   sync.Map // name -> *rlock.Lock, made once per name as a user would
}

func newLeasehold(tb testing.TB, addr string, ttl time.Duration) library {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, PipelineMultiplex: benchMultiplex})
	if err != nil {
		tb.Fatal(err)
	}
	counted := redistest.NewCounting(rc)
	c, err := leasehold.New(counted, leasehold.WithWatchdog(ttl))
	if err != nil {
		tb.Fatal(err)
	}
	return &leaseholdLib{c: c, counted: counted}
}

func (l *leaseholdLib) get(name string) *rlock.Lock {
	if v, ok := l.locks.Load(name); ok {
		return v.(*rlock.Lock)
	}
	v, _ := l.locks.LoadOrStore(name, rlock.New(l.c, name))
	return v.(*rlock.Lock)
}

func (l *leaseholdLib) lock(ctx context.Context, name string) (func(), error) {
	ls, err := l.get(name).Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return func() { _ = ls.Release(context.Background()) }, nil
}

func (l *leaseholdLib) renewing(ctx context.Context, name string) (func(), error) {
	return l.lock(ctx, name) // the keeper renews
}

func (l *leaseholdLib) rounds() int64 { return l.counted.Rounds() }
func (l *leaseholdLib) close() {
	l.c.Close()
	l.counted.Client.Close()
}

type rueidislockLib struct {
	l       rueidislock.Locker
	counted *redistest.Counting
}

func newRueidislock(tb testing.TB, addr string, ttl time.Duration) library {
	r := &rueidislockLib{}
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   rueidis.ClientOption{InitAddress: []string{addr}},
		KeyMajority:    1,
		NoLoopTracking: true,
		KeyValidity:    ttl,
		ExtendInterval: ttl / 3,
		// Its default of 20ms bounds each acquire's round trip: on a busy
		// 2-core machine one slower reply fails the attempt, and WithContext
		// then sleeps on a free lock until an invalidation that never comes
		// (seen here: a benchmark hung for ten minutes).
		TryNextAfter: time.Second,
		ClientBuilder: func(o rueidis.ClientOption) (rueidis.Client, error) {
			c, err := rueidis.NewClient(o)
			if err != nil {
				return nil, err
			}
			r.counted = redistest.NewCounting(c)
			return r.counted, nil
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	r.l = l
	return r
}

func (r *rueidislockLib) lock(ctx context.Context, name string) (func(), error) {
	_, cancel, err := r.l.WithContext(ctx, name)
	if err != nil {
		return nil, err
	}
	return cancel, nil
}

func (r *rueidislockLib) renewing(ctx context.Context, name string) (func(), error) {
	return r.lock(ctx, name) // rueidislock extends each lock on its own timer
}

func (r *rueidislockLib) rounds() int64 { return r.counted.Rounds() }
func (r *rueidislockLib) close()        { r.l.Close() }

// countHook counts go-redis round trips: a command or a pipeline each.
type countHook struct{ n atomic.Int64 }

func (h *countHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }
func (h *countHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}
func (h *countHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

func newGoRedis(addr string) (*goredis.Client, *countHook) {
	rdb := goredis.NewClient(&goredis.Options{Addr: addr})
	h := &countHook{}
	rdb.AddHook(h)
	return rdb, h
}

type redsyncLib struct {
	rdb *goredis.Client
	h   *countHook
	rs  *redsync.Redsync
	ttl time.Duration
}

func newRedsync(tb testing.TB, addr string, ttl time.Duration) library {
	rdb, h := newGoRedis(addr)
	return &redsyncLib{rdb: rdb, h: h, rs: redsync.New(redsyncgoredis.NewPool(rdb)), ttl: ttl}
}

func (r *redsyncLib) mutex(name string) *redsync.Mutex {
	return r.rs.NewMutex(name, redsync.WithExpiry(r.ttl), redsync.WithTries(math.MaxInt32))
}

func (r *redsyncLib) lock(ctx context.Context, name string) (func(), error) {
	m := r.mutex(name)
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return func() { _, _ = m.UnlockContext(context.Background()) }, nil
}

// renewing is what a redsync user writes: a goroutine per lock extending it
// every ttl/3.
func (r *redsyncLib) renewing(ctx context.Context, name string) (func(), error) {
	m := r.mutex(name)
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return renewLoop(r.ttl, func() { _, _ = m.ExtendContext(context.Background()) },
		func() { _, _ = m.UnlockContext(context.Background()) }), nil
}

func (r *redsyncLib) rounds() int64 { return r.h.n.Load() }
func (r *redsyncLib) close()        { r.rdb.Close() }

type redislockLib struct {
	rdb *goredis.Client
	h   *countHook
	c   *redislock.Client
	ttl time.Duration
}

func newRedislock(tb testing.TB, addr string, ttl time.Duration) library {
	rdb, h := newGoRedis(addr)
	return &redislockLib{rdb: rdb, h: h, c: redislock.New(rdb), ttl: ttl}
}

func (r *redislockLib) obtain(ctx context.Context, name string) (*redislock.Lock, error) {
	if _, ok := ctx.Deadline(); !ok {
		// redislock bounds an undeadlined wait by the ttl; wait as long as
		// the others do.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Hour)
		defer cancel()
	}
	return r.c.Obtain(ctx, name, r.ttl, &redislock.Options{RetryStrategy: redislock.LinearBackoff(100 * time.Millisecond)})
}

func (r *redislockLib) lock(ctx context.Context, name string) (func(), error) {
	l, err := r.obtain(ctx, name)
	if err != nil {
		return nil, err
	}
	return func() { _ = l.Release(context.Background()) }, nil
}

func (r *redislockLib) renewing(ctx context.Context, name string) (func(), error) {
	l, err := r.obtain(ctx, name)
	if err != nil {
		return nil, err
	}
	return renewLoop(r.ttl, func() { _ = l.Refresh(context.Background(), r.ttl, nil) },
		func() { _ = l.Release(context.Background()) }), nil
}

func (r *redislockLib) rounds() int64 { return r.h.n.Load() }
func (r *redislockLib) close()        { r.rdb.Close() }

// renewLoop runs extend every ttl/3 in a goroutine until the returned
// function stops it and runs release.
func renewLoop(ttl time.Duration, extend, release func()) func() {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				extend()
			}
		}
	}()
	return func() { close(stop); <-done; release() }
}

// each runs bench for every library against one fresh redis-server.
func each(b *testing.B, ttl time.Duration, bench func(b *testing.B, srv *redistest.Server, lib library)) {
	srv := redistest.Start(b)
	for _, m := range libraries {
		b.Run(m.name, func(b *testing.B) {
			srv.Do("FLUSHALL")
			lib := m.make(b, srv.Addr(), ttl)
			defer lib.close()
			bench(b, srv, lib)
		})
	}
}

// 1. Uncontended: one goroutine takes and frees one lock.
func BenchmarkUncontended(b *testing.B) {
	each(b, 30*time.Second, func(b *testing.B, srv *redistest.Server, lib library) {
		ctx := context.Background()
		unlock, err := lib.lock(ctx, "uncontended") // warm: scripts loaded, connections up
		if err != nil {
			b.Fatal(err)
		}
		unlock()
		start := lib.rounds()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			unlock, err := lib.lock(ctx, "uncontended")
			if err != nil {
				b.Fatal(err)
			}
			unlock()
		}
		b.StopTimer()
		b.ReportMetric(float64(lib.rounds()-start)/float64(b.N), "roundtrips/op")
	})
}

// 2. Parallel distinct keys: many goroutines, each its own lock.
func BenchmarkParallelDistinct(b *testing.B) {
	each(b, 30*time.Second, func(b *testing.B, srv *redistest.Server, lib library) {
		var next atomic.Int64
		b.SetParallelism(16) // 32 goroutines on 2 cores
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			name := fmt.Sprintf("distinct-%d", next.Add(1))
			ctx := context.Background()
			for pb.Next() {
				unlock, err := lib.lock(ctx, name)
				if err != nil {
					b.Error(err)
					return
				}
				unlock()
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
	})
}

// 3. Contended: 64 goroutines fight for one lock. Every handoff goes to
// another goroutine that was waiting: after its release a goroutine does not
// contend again until someone else has taken the lock, and each holder works
// for holdFor in its critical section, so that when it releases every other
// goroutine is settled in its wait. Without these, the releaser or a fresh
// contender re-wins the lock at once, which measures no wake-up at all and
// flatters pollers. Handoff latency runs from the holder's release to the
// next holder's lock returning.
// holdFor is the work each holder does in its critical section in
// BenchmarkContended. Handoffs/s is 1/(holdFor + handoff latency), so the
// ratio between a woken and a polling library grows as holdFor shrinks.
var holdFor = flag.Duration("contended.hold", 250*time.Microsecond, "work inside the critical section in BenchmarkContended")

func BenchmarkContended(b *testing.B) {
	each(b, 30*time.Second, func(b *testing.B, srv *redistest.Server, lib library) {
		const workers = 64
		var (
			mu          sync.Mutex
			taken       = sync.NewCond(&mu)
			count       int64 // acquisitions so far, under mu
			lastRelease atomic.Int64
			lat         []time.Duration
			wg          sync.WaitGroup
		)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stop := func() {
			cancel()
			mu.Lock()
			taken.Broadcast()
			mu.Unlock()
		}
		rounds := lib.rounds()
		b.ResetTimer()
		start := time.Now()
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					unlock, err := lib.lock(ctx, "contended")
					if err != nil {
						if ctx.Err() == nil {
							b.Error(err)
						}
						return
					}
					now := time.Now()
					mu.Lock()
					if t := lastRelease.Load(); t != 0 {
						lat = append(lat, now.Sub(time.Unix(0, t)))
					}
					count++
					mine, done := count, count >= int64(b.N)
					taken.Broadcast()
					mu.Unlock()
					time.Sleep(*holdFor)
					lastRelease.Store(time.Now().UnixNano())
					unlock()
					if done {
						stop()
						return
					}
					mu.Lock()
					for count == mine && ctx.Err() == nil {
						taken.Wait()
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		b.StopTimer()
		b.ReportMetric(float64(b.N)/elapsed.Seconds(), "handoffs/s")
		// What waiting costs Redis: polls show up here.
		b.ReportMetric(float64(lib.rounds()-rounds)/float64(b.N), "roundtrips/handoff")
		if len(lat) > 0 {
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		}
	})
}

var clientLine = regexp.MustCompile(`(?m)^(txt:)?id=`)

func connections(b *testing.B, srv *redistest.Server) int {
	s, err := srv.Do("CLIENT", "LIST").ToString()
	if err != nil {
		b.Fatal(err)
	}
	return len(clientLine.FindAllString(s, -1)) - 1 // not the CLIENT LIST connection
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// 4. Many waiters: 10,000 goroutines wait on 1,000 held locks. Reports the
// connections and subscriptions the waiting library uses and its heap per
// waiter. A separate instance of each library holds the locks.
func BenchmarkManyWaiters(b *testing.B) {
	const names, waiters = 1000, 10000
	srv := redistest.Start(b)
	for _, m := range libraries {
		b.Run(m.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				srv.Do("FLUSHALL")
				holder := m.make(b, srv.Addr(), 30*time.Second)
				var unlocks []func()
				for n := 0; n < names; n++ {
					u, err := holder.lock(context.Background(), fmt.Sprintf("waited-%d", n))
					if err != nil {
						b.Fatal(err)
					}
					unlocks = append(unlocks, u)
				}
				baseConns := connections(b, srv)
				baseHeap := heapInUse()
				lib := m.make(b, srv.Addr(), 30*time.Second)
				ctx, cancel := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				var started atomic.Int64
				for w := 0; w < waiters; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						started.Add(1)
						if u, err := lib.lock(ctx, fmt.Sprintf("waited-%d", w%names)); err == nil {
							u() // only if a holder's lease ran out; not expected
						}
					}()
				}
				for started.Load() < waiters {
					time.Sleep(time.Millisecond)
				}
				// Let every waiter make its first attempt and settle into
				// its wait (subscribed, or sleeping between polls).
				if ll, ok := lib.(*leaseholdLib); ok {
					for ll.c.Stats().Waiters < waiters {
						time.Sleep(time.Millisecond)
					}
				}
				time.Sleep(2 * time.Second)
				heap := heapInUse()
				conns := connections(b, srv) - baseConns
				chans, _ := srv.Do("PUBSUB", "NUMPAT").AsInt64()
				list, _ := srv.Do("PUBSUB", "CHANNELS").AsStrSlice()
				b.ReportMetric(float64(conns), "conns")
				b.ReportMetric(float64(int64(len(list))+chans), "subscriptions")
				b.ReportMetric(float64(int64(heap)-int64(baseHeap))/waiters, "heapB/waiter")
				cancel()
				wg.Wait()
				for _, u := range unlocks {
					u()
				}
				lib.close()
				holder.close()
			}
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// 5. Renewal: 10,000 held watchdog leases (ttl 3s, renewed every 1s).
// Reports round trips and CPU time of this process per renewal tick.
func BenchmarkRenewal(b *testing.B) {
	const leases, ttl, ticks = 10000, 3 * time.Second, 3
	each(b, ttl, func(b *testing.B, srv *redistest.Server, lib library) {
		for i := 0; i < b.N; i++ {
			var unlocks []func()
			for n := 0; n < leases; n++ {
				u, err := lib.renewing(context.Background(), fmt.Sprintf("renewed-%d", n))
				if err != nil {
					b.Fatal(err)
				}
				unlocks = append(unlocks, u)
			}
			rounds, cpu := lib.rounds(), cpuTime()
			time.Sleep(ticks * ttl / 3)
			b.ReportMetric(float64(lib.rounds()-rounds)/ticks, "roundtrips/tick")
			b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1000/ticks, "cpu-ms/tick")
			for _, u := range unlocks {
				u()
			}
		}
	})
}

var benchMultiplex = -1
