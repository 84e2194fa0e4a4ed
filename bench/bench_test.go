package bench_test

// Benchmarks of leasehold against the Go peers, each scenario run for every
// library against the same redis-server in the same `go test -bench` run, so
// that their ratios hold on a noisy machine:
//
//	go test -run '^$' -bench . -count 5 . | tee bench.txt   # see bench.sh
//
// Peers: redisson, Redisson's RLock scripts over a plain rueidis client, a
// stand-in for the Redisson layout without a fencing token (see
// redisson_test.go); rueidislock (in rueidis; one key per lock, KeyMajority 1,
// and NOLOOP tracking, its fastest settings, with TryNextAfter raised from
// 20ms to 1s so that a slow reply cannot stall it), go-redsync/redsync v4
// over go-redis (its default retry delay, 50-250ms at random, tries
// unbounded), and bsm/redislock v0.10.0 over go-redis (retrying every 100ms,
// as its README shows). redsync and redislock poll while they wait;
// redisson, rueidislock and leasehold are woken.
//
// The scenarios: Uncontended, ParallelDistinct, Contended, ManyWaiters and
// Renewal on loopback; Network, the first three through a proxy that delays
// every byte 250µs or 1ms each way; FairWaiters, what fairqueue waiters cost
// Redis while they keep their places; and the Scale benchmarks, whose curves
// tools/benchchart draws: they (and FairWaiters' 5,000-waiter points) run
// their full ranges with -scale only, and their first point otherwise, so
// that CI's -benchtime=1x run stays short. Uncontended and ParallelDistinct
// also report what an acquire+release costs Redis (see usage). With
// -bench.kinds, Uncontended, ParallelDistinct and Contended run leasehold's
// other lock kinds too, and with -bench.variants the first two run leasehold
// in rueidis' pipelined mode (see kinds_test.go).

import (
	"bytes"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
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
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/racebuild"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/script"
)

// library is one lock library under test. lock blocks until name is held
// with a lease of ttl kept alive while held (watchdog, or the caller's
// renewal), and returns its release.
type library interface {
	lock(ctx context.Context, name string) (unlock func(), err error)
	// rounds counts the round trips made so far.
	rounds() int64
	// sent counts the commands sent so far, by lower-case name.
	sent() map[string]int64
	// renewing holds name and keeps it renewed until the returned release.
	renewing(ctx context.Context, name string) (unlock func(), err error)
	close()
}

type libMaker struct {
	name string
	make func(tb testing.TB, addr string, ttl time.Duration) library
	// shared is set for a lock whose holders do not exclude each other (rw's
	// read lock): Contended, which times handoffs, leaves it out.
	shared bool
}

// libraries are the peer comparison: every scenario runs each of them, and
// the ratios in docs/benchmarks.md are between them.
var libraries = []libMaker{
	{name: "leasehold", make: newLeasehold},
	{name: "leasehold-new", make: newLeaseholdNew},
	{name: "redisson", make: newRedisson},
	{name: "rueidislock", make: newRueidislock},
	{name: "redsync", make: newRedsync},
	{name: "redislock", make: newRedislock},
}

// leasehold, as users make it: leasehold.Open with its defaults, its
// connections counted on the wire (see wire). The leasehold-new row is
// leasehold.New over a rueidis client made with the same options, counted
// by a wrapper of the client as the peers are.
type leaseholdLib struct {
	c      *leasehold.Client
	count  func() int64 // round trips so far
	cmds   *sentCounts
	kind   lockKind
	locks  sync.Map // name -> lease.Locker, made once per name as a user would
	closed func()   // closes what the Client does not
}

// leaseholdOption is the rueidis client every leasehold runner dials:
// Open's defaults (one connection), PipelineMultiplex as -bench.multiplex
// says.
func leaseholdOption(addr string) rueidis.ClientOption {
	return rueidis.ClientOption{InitAddress: []string{addr}, PipelineMultiplex: benchMultiplex}
}

func newLeasehold(tb testing.TB, addr string, ttl time.Duration) library {
	return openLeasehold(tb, leaseholdOption(addr), ttl, rlockKind{})
}

func newLeaseholdNew(tb testing.TB, addr string, ttl time.Duration) library {
	return newLeaseholdOver(tb, leaseholdOption(addr), ttl, rlockKind{})
}

// openLeasehold makes a leasehold runner of kind on a Client made by
// leasehold.Open with opt, its connections counted on the wire.
func openLeasehold(tb testing.TB, opt rueidis.ClientOption, ttl time.Duration, kind lockKind) *leaseholdLib {
	w := &wire{cmds: new(sentCounts)}
	opt.DialCtxFn = w.dial
	c, err := leasehold.Open(opt, leasehold.WithWatchdog(ttl))
	if err != nil {
		tb.Fatal(err)
	}
	return &leaseholdLib{c: c, count: w.writes.Load, cmds: w.cmds, kind: kind, closed: func() {}}
}

// newLeaseholdOver makes a leasehold runner of kind on a Client made by
// leasehold.New over a rueidis client dialled with opt, counted as the
// peers' are. (Its tracking connection is not counted.)
func newLeaseholdOver(tb testing.TB, opt rueidis.ClientOption, ttl time.Duration, kind lockKind) *leaseholdLib {
	rc, err := rueidis.NewClient(opt)
	if err != nil {
		tb.Fatal(err)
	}
	counted := redistest.NewCounting(rc)
	cmds := new(sentCounts)
	c, err := leasehold.New(&naming{Client: counted, cmds: cmds}, leasehold.WithWatchdog(ttl))
	if err != nil {
		rc.Close()
		tb.Fatal(err)
	}
	return &leaseholdLib{c: c, count: counted.Rounds, cmds: cmds, kind: kind, closed: rc.Close}
}

// wire counts what a client writes to Redis on the connections it dials:
// each Write is one round trip's requests (rueidis writes a batch of
// commands at once, then reads their replies), and each RESP array written
// one command, counted by name. It costs no allocation once a name is known.
type wire struct {
	writes atomic.Int64
	cmds   *sentCounts
}

func (w *wire) dial(ctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &wireConn{Conn: conn, w: w}, nil
}

// wireConn is one counted connection. rueidis writes to a connection from
// one goroutine at a time.
type wireConn struct {
	net.Conn
	w *wire
	// The RESP scanner's state, across writes: a header line begun, the
	// bytes of a bulk string (and its CRLF) still to come, and the first
	// bulk string of a command (its name) being read.
	line  []byte
	bulk  int
	first bool
	name  []byte
}

func (c *wireConn) Write(b []byte) (int, error) {
	c.w.writes.Add(1)
	c.scan(b)
	return c.Conn.Write(b)
}

// scan reads the commands in b, arrays of bulk strings, and counts each
// by its first bulk string.
func (c *wireConn) scan(b []byte) {
	for len(b) > 0 {
		if c.bulk > 0 {
			n := min(c.bulk, len(b))
			if c.first {
				c.name = append(c.name, b[:n]...)
			}
			c.bulk -= n
			b = b[n:]
			if c.bulk == 0 && c.first {
				c.w.cmds.addBytes(c.name[:len(c.name)-2]) // less its CRLF
				c.first, c.name = false, c.name[:0]
			}
			continue
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			c.line = append(c.line, b...)
			return
		}
		c.line = append(c.line, b[:i+1]...)
		b = b[i+1:]
		if len(c.line) >= 4 {
			n, _ := strconv.Atoi(string(c.line[1 : len(c.line)-2]))
			switch c.line[0] {
			case '*':
				c.first = true
			case '$':
				c.bulk = n + 2
			}
		}
		c.line = c.line[:0]
	}
}

// get returns name's lock, made on first use (a semaphore's permits set then).
func (l *leaseholdLib) get(ctx context.Context, name string) (lease.Locker, error) {
	if v, ok := l.locks.Load(name); ok {
		return v.(lease.Locker), nil
	}
	lk, err := l.kind.locker(ctx, l.c, name)
	if err != nil {
		return nil, err
	}
	v, _ := l.locks.LoadOrStore(name, lk)
	return v.(lease.Locker), nil
}

func (l *leaseholdLib) lock(ctx context.Context, name string) (func(), error) {
	lk, err := l.get(ctx, name)
	if err != nil {
		return nil, err
	}
	ls, err := lk.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return func() { _ = ls.Release(context.Background()) }, nil
}

func (l *leaseholdLib) renewing(ctx context.Context, name string) (func(), error) {
	return l.lock(ctx, name) // the keeper renews
}

func (l *leaseholdLib) rounds() int64          { return l.count() }
func (l *leaseholdLib) sent() map[string]int64 { return l.cmds.snapshot() }
func (l *leaseholdLib) close() {
	l.c.Close()
	l.closed()
}

type rueidislockLib struct {
	l       rueidislock.Locker
	counted *redistest.Counting
	cmds    sentCounts
}

func newRueidislock(tb testing.TB, addr string, ttl time.Duration) library {
	return rueidislockOn(tb, rueidis.ClientOption{InitAddress: []string{addr}}, ttl)
}

// rueidislockOn makes a rueidislock runner on a client dialled with opt.
func rueidislockOn(tb testing.TB, opt rueidis.ClientOption, ttl time.Duration) library {
	r := &rueidislockLib{}
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   opt,
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
			return &naming{Client: r.counted, cmds: &r.cmds}, nil
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

func (r *rueidislockLib) rounds() int64          { return r.counted.Rounds() }
func (r *rueidislockLib) sent() map[string]int64 { return r.cmds.snapshot() }
func (r *rueidislockLib) close()                 { r.l.Close() }

// countHook counts go-redis round trips, a command or a pipeline each, and
// the commands by name.
type countHook struct {
	n    atomic.Int64
	cmds sentCounts
}

func (h *countHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }
func (h *countHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		h.n.Add(1)
		h.cmds.add(cmd.Name())
		return next(ctx, cmd)
	}
}
func (h *countHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		h.n.Add(1)
		for _, cmd := range cmds {
			h.cmds.add(cmd.Name())
		}
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

func (r *redsyncLib) rounds() int64          { return r.h.n.Load() }
func (r *redsyncLib) sent() map[string]int64 { return r.h.cmds.snapshot() }
func (r *redsyncLib) close()                 { r.rdb.Close() }

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

func (r *redislockLib) rounds() int64          { return r.h.n.Load() }
func (r *redislockLib) sent() map[string]int64 { return r.h.cmds.snapshot() }
func (r *redislockLib) close()                 { r.rdb.Close() }

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

// rounds is how many times each scenario runs every library, the libraries
// one after the other in each round, so that a ratio between two libraries
// is of runs minutes apart at most, whatever the machine's speed does
// meanwhile. go test's -count runs one library its count times in a row
// before the next: bench.sh runs -count 1 -rounds COUNT. The rounds after
// the first are named NAME#01, NAME#02 (go test's names for a repeated
// sub-benchmark), which bench.sh and benchchart read as NAME: a -bench
// pattern that picks libraries lets them through, as in
// '^BenchmarkContended$/^(leasehold|rueidislock)(#[0-9]+)?$'.
var benchRounds = flag.Int("rounds", 1, "run each scenario's libraries this many times, alternating")

// inRounds runs one round of every run of runs (a library, or a mix of
// them), -rounds times.
func inRounds[T any](b *testing.B, runs []T, run func(T)) {
	for range max(*benchRounds, 1) {
		for _, r := range runs {
			run(r)
		}
	}
}

// each runs bench for every library of libs against one fresh redis-server.
func each(b *testing.B, ttl time.Duration, libs []libMaker, bench func(b *testing.B, srv *redistest.Server, lib library)) {
	srv := redistest.Start(b)
	eachOn(b, srv, srv.Addr(), ttl, libs, func(b *testing.B, lib library) { bench(b, srv, lib) })
}

// eachOn runs bench for every library of libs, each a sub-benchmark with a
// client of its own dialling addr (srv's, or a proxy's in front of it), srv
// flushed.
func eachOn(b *testing.B, srv *redistest.Server, addr string, ttl time.Duration, libs []libMaker, bench func(b *testing.B, lib library)) {
	inRounds(b, libs, func(m libMaker) {
		b.Run(m.name, func(b *testing.B) {
			srv.Do("FLUSHALL")
			lib := m.make(b, addr, ttl)
			defer lib.close()
			bench(b, lib)
		})
	})
}

// 1. Uncontended: one goroutine takes and frees one lock.
func BenchmarkUncontended(b *testing.B) {
	each(b, 30*time.Second, scenarioLibs(false), func(b *testing.B, srv *redistest.Server, lib library) {
		ctx := context.Background()
		unlock, err := lib.lock(ctx, "uncontended") // warm: scripts loaded, connections up
		if err != nil {
			b.Fatal(err)
		}
		unlock()
		start := lib.rounds()
		before := readUsage(b, srv, lib)
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
		readUsage(b, srv, lib).report(b, before, b.N)
	})
}

// 2. Parallel distinct keys: many goroutines, each its own lock.
func BenchmarkParallelDistinct(b *testing.B) {
	each(b, 30*time.Second, scenarioLibs(false), func(b *testing.B, srv *redistest.Server, lib library) {
		var next atomic.Int64
		before := readUsage(b, srv, lib)
		b.SetParallelism(32) // 64 goroutines on 2 cores
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
		elapsed := time.Since(start)
		b.StopTimer()
		b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
		readUsage(b, srv, lib).report(b, before, b.N)
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
	each(b, 30*time.Second, scenarioLibs(true), func(b *testing.B, srv *redistest.Server, lib library) { contended(b, srv, lib) })
}

// contended runs scenario 3 on lib: b.N handoffs among 64 goroutines
// (locktest.Handoffs), timed from a release to the next holder's lock
// returning. Reports what Redis did per handoff (usage.report).
func contended(b *testing.B, srv *redistest.Server, lib library) {
	var (
		mu          sync.Mutex
		lat         []time.Duration
		lastRelease atomic.Int64
	)
	acquire := func(ctx context.Context) (func(), error) {
		unlock, err := lib.lock(ctx, "contended")
		if err != nil {
			return nil, err
		}
		now := time.Now()
		if t := lastRelease.Load(); t != 0 {
			mu.Lock()
			lat = append(lat, now.Sub(time.Unix(0, t)))
			mu.Unlock()
		}
		return func() {
			lastRelease.Store(time.Now().UnixNano())
			unlock()
		}, nil
	}
	rounds := lib.rounds()
	since := readUsage(b, srv, lib)
	b.ResetTimer()
	elapsed := locktest.Handoffs(b, 64, b.N, *holdFor, acquire)
	b.StopTimer()
	readUsage(b, srv, lib).report(b, since, b.N)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "handoffs/s")
	// What waiting costs Redis: polls show up here.
	b.ReportMetric(float64(lib.rounds()-rounds)/float64(b.N), "roundtrips/handoff")
	percentiles(b, lat)
}

// 2b. Distinct keys in Redis Cluster: 32 goroutines (half ParallelDistinct's), each
// on a lock of its own, against a cluster of 3 masters, for leasehold and
// rueidislock. Reports ops/s, the masters' CPU per op, all of it, and each
// master's share of it (share-1 .. share-3, busiest first): a lock's keys
// live in its name's slot, so the work spreads over the masters as locks
// spread over slots.
func BenchmarkClusterDistinct(b *testing.B) {
	cl := redistest.StartCluster(b, 3)
	masters := cl.Primaries()
	inRounds(b, []libMaker{{name: "leasehold", make: newLeaseholdCluster(cl)}, {name: "rueidislock", make: newRueidislockCluster(cl)}}, func(m libMaker) {
		b.Run(m.name, func(b *testing.B) {
			for _, p := range masters {
				p.Do("FLUSHALL")
			}
			lib := m.make(b, "", 30*time.Second)
			defer lib.close()
			cpu := func() []time.Duration {
				v := make([]time.Duration, len(masters))
				for i, p := range masters {
					info, err := p.Do("INFO", "cpu").ToString()
					if err != nil {
						b.Fatal(err)
					}
					for line := range strings.Lines(info) {
						key, value, _ := strings.Cut(strings.TrimSpace(line), ":")
						if key == "used_cpu_user" || key == "used_cpu_sys" {
							f, _ := strconv.ParseFloat(value, 64)
							v[i] += time.Duration(f * float64(time.Second))
						}
					}
				}
				return v
			}
			var next atomic.Int64
			before := cpu()
			b.SetParallelism(16)
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
			elapsed := time.Since(start)
			b.StopTimer()
			after := cpu()
			var total time.Duration
			used := make([]time.Duration, len(masters))
			for i := range masters {
				used[i] = after[i] - before[i]
				total += used[i]
			}
			slices.Sort(used)
			slices.Reverse(used)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
			b.ReportMetric(float64(total.Microseconds())/float64(b.N), "redis-cpu-µs/op")
			for i, u := range used {
				b.ReportMetric(float64(u)/float64(max(total, 1)), fmt.Sprintf("share-%d", i+1))
			}
		})
	})
}

// newLeaseholdCluster makes leasehold runners on cl: Open with cl's options.
func newLeaseholdCluster(cl *redistest.Cluster) func(tb testing.TB, _ string, ttl time.Duration) library {
	return func(tb testing.TB, _ string, ttl time.Duration) library {
		return openLeasehold(tb, cl.Option(), ttl, rlockKind{})
	}
}

// newRueidislockCluster makes rueidislock runners on cl, as newRueidislock
// does on one server.
func newRueidislockCluster(cl *redistest.Cluster) func(tb testing.TB, _ string, ttl time.Duration) library {
	return func(tb testing.TB, _ string, ttl time.Duration) library {
		return rueidislockOn(tb, cl.Option(), ttl)
	}
}

// 3b. Contended by several Clients: 3 Clients (3 processes, as far as Redis
// can tell) of each library, 5 goroutines on each, fight for one lock, as
// in Contended. Every Client has waiters, so no handoff stays inside one,
// and a Client that kept the lock among its own goroutines would starve
// the others: besides handoffs/s it reports who got the lock (see
// contendedClients). The run named leasehold+redisson mixes libraries:
// process 1 is the redisson runner (Redisson's scripts with its
// subscription), processes 2 and 3 leasehold.
func BenchmarkContendedClients(b *testing.B) {
	const clients = 3
	type run struct {
		name  string
		procs []libMaker // a Client each
	}
	var runs []run
	for _, m := range scenarioLibs(true) {
		runs = append(runs, run{m.name, slices.Repeat([]libMaker{m}, clients)})
	}
	leasehold, redisson := libMaker{name: "leasehold", make: newLeasehold}, libMaker{name: "redisson", make: newRedisson}
	runs = append(runs, run{"leasehold+redisson", []libMaker{redisson, leasehold, leasehold}})
	srv := redistest.Start(b)
	inRounds(b, runs, func(r run) {
		b.Run(r.name, func(b *testing.B) { contendedClients(b, srv, r.procs) })
	})
}

// contendedClients runs b.N handoffs of one lock among 5 goroutines of each
// of procs' Clients (locktest.HandoffsBy), on srv flushed. Reports:
//
//   - handoffs/s, and roundtrips/handoff of every Client;
//   - share-p1, share-p2, ...: each process's share of the acquisitions, in
//     the order of procs;
//   - min-share/even: the smallest share over an even one (1/len(procs)),
//     every process having as many waiters: 1 when each got as many, 0 when
//     one never got the lock;
//   - max-wait-µs: the longest that any waiter waited in one lock call,
//     counting the waits that the run's end cut short.
func contendedClients(b *testing.B, srv *redistest.Server, procs []libMaker) {
	const each = 5
	srv.Do("FLUSHALL")
	libs := make([]library, len(procs))
	for i, m := range procs {
		libs[i] = m.make(b, srv.Addr(), 30*time.Second)
		defer libs[i].close()
	}
	rounds := func() (n int64) {
		for _, l := range libs {
			n += l.rounds()
		}
		return n
	}
	grants := make([]atomic.Int64, len(libs))
	var longest atomic.Int64 // ns
	before := rounds()
	b.ResetTimer()
	elapsed := locktest.HandoffsBy(b, len(libs)*each, b.N, *holdFor, func(ctx context.Context, w int) (func(), error) {
		p := w % len(libs)
		start := time.Now()
		unlock, err := libs[p].lock(ctx, "contended")
		for waited := int64(time.Since(start)); ; {
			cur := longest.Load()
			if waited <= cur || longest.CompareAndSwap(cur, waited) {
				break
			}
		}
		if err != nil {
			return nil, err
		}
		grants[p].Add(1)
		return unlock, nil
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "handoffs/s")
	b.ReportMetric(float64(rounds()-before)/float64(b.N), "roundtrips/handoff")
	var total int64
	for i := range grants {
		total += grants[i].Load()
	}
	least := 1.0
	for i := range grants {
		share := float64(grants[i].Load()) / float64(max(total, 1))
		least = min(least, share)
		b.ReportMetric(share, fmt.Sprintf("share-p%d", i+1))
	}
	b.ReportMetric(least*float64(len(libs)), "min-share/even")
	b.ReportMetric(float64(longest.Load())/1e3, "max-wait-µs")
}

// percentiles reports the p50 and p99 of lat, in µs; nothing when it is empty.
// It sorts lat.
func percentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	b.ReportMetric(us(lat[len(lat)/2]), "p50-µs")
	b.ReportMetric(us(lat[len(lat)*99/100]), "p99-µs")
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
	heap, _ := memInUse()
	return heap
}

// 4. Many waiters: 10,000 goroutines wait on 1,000 held locks. Reports the
// connections and subscriptions the waiting library uses and its heap per
// waiter. A separate instance of each library holds the locks.
func BenchmarkManyWaiters(b *testing.B) {
	const names, waiters = 1000, 10000
	srv := redistest.Start(b)
	inRounds(b, libraries, func(m libMaker) {
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
	})
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// 5. Renewal: 10,000 held watchdog leases (ttl 3s, renewed every 1s).
// Reports round trips and CPU time of this process per renewal tick.
func BenchmarkRenewal(b *testing.B) {
	const ttl, ticks = 3 * time.Second, 3
	leases := 10000
	if racebuild.Enabled {
		// A goroutine per lease renewing every second, as redsync's and
		// redislock's users write it, asks more of go-redis' 20 connections
		// than a race build serves: their queue grows without end, and the
		// releases at the end wait behind it for many minutes.
		leases = 1000
	}
	each(b, ttl, libraries, func(b *testing.B, srv *redistest.Server, lib library) {
		for i := 0; i < b.N; i++ {
			var unlocks []func()
			for n := 0; n < leases; n++ {
				u, err := lib.renewing(context.Background(), fmt.Sprintf("renewed-%d", n))
				if err != nil {
					b.Fatal(err)
				}
				unlocks = append(unlocks, u)
			}
			debug.FreeOSMemory() // ManyWaiters' memory, before the CPU time is read
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

// benchMultiplex is leasehold's rueidis PipelineMultiplex in the benchmarks:
// -1, one connection, as Open's default.
var benchMultiplex = *flag.Int("bench.multiplex", -1, "leasehold's rueidis PipelineMultiplex in the benchmarks (2^n connections; -1: one, as Open's default)")

// sentCounts counts the commands a library sends, by name, so that usage
// can tell them from the commands its scripts run: INFO commandstats counts
// those too, and a script's time includes theirs. Adding costs no allocation
// and no lock once a name is known, so that it does not move allocs/op or
// throughput: the map is replaced, never written, when a name is new.
type sentCounts struct {
	mu sync.Mutex // serialises adding a name
	m  atomic.Pointer[map[string]*atomic.Int64]
}

// addBytes is add of a name read off the wire, without a string made of it
// once the name is known.
func (s *sentCounts) addBytes(name []byte) {
	if m := s.m.Load(); m != nil {
		if n := (*m)[string(name)]; n != nil {
			n.Add(1)
			return
		}
	}
	s.add(string(name))
}

func (s *sentCounts) add(name string) {
	if m := s.m.Load(); m != nil {
		if n := (*m)[name]; n != nil {
			n.Add(1)
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[string]*atomic.Int64)
	if m := s.m.Load(); m != nil {
		if n := (*m)[name]; n != nil {
			n.Add(1)
			return
		}
		for k, v := range *m {
			next[k] = v
		}
	}
	n := new(atomic.Int64)
	n.Add(1)
	next[strings.Clone(name)] = n
	s.m.Store(&next)
}

// snapshot returns the counts so far by lower-case name, as Redis names
// commands in INFO commandstats.
func (s *sentCounts) snapshot() map[string]int64 {
	out := make(map[string]int64)
	if m := s.m.Load(); m != nil {
		for k, v := range *m {
			out[strings.ToLower(k)] += v.Load()
		}
	}
	return out
}

// naming counts the commands sent through a rueidis client by name.
type naming struct {
	rueidis.Client
	cmds *sentCounts
}

func (n *naming) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	n.cmds.add(cmd.Commands()[0])
	return n.Client.Do(ctx, cmd)
}

func (n *naming) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	for i := range multi {
		n.cmds.add(multi[i].Commands()[0])
	}
	return n.Client.DoMulti(ctx, multi...)
}

func (n *naming) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	n.cmds.add(cmd.Commands()[0])
	return n.Client.DoCache(ctx, cmd, ttl)
}

func (n *naming) DoMultiCache(ctx context.Context, multi ...rueidis.CacheableTTL) []rueidis.RedisResult {
	for i := range multi {
		n.cmds.add(multi[i].Cmd.Commands()[0])
	}
	return n.Client.DoMultiCache(ctx, multi...)
}

func (n *naming) Receive(ctx context.Context, subscribe rueidis.Completed, fn func(rueidis.PubSubMessage)) error {
	n.cmds.add(subscribe.Commands()[0])
	return n.Client.Receive(ctx, subscribe, fn)
}

// usage is what Redis has done so far, as INFO reports it, and what one
// library has sent it.
type usage struct {
	cpu         time.Duration    // used_cpu_user + used_cpu_sys
	commands    int64            // total_commands_processed, those scripts call included
	calls, usec map[string]int64 // INFO commandstats, by command
	sent        map[string]int64 // the library's own count, by command
	halts       int64            // the machine's CPUs' halts so far (see cpuHalts)
	haltsRead   bool             // the kernel told them
}

// cpuHalts is how many times the machine's CPUs have gone idle in a state
// that stops them (every cpuidle state but POLL), summed over the CPUs and
// over every process, Redis' too; ok is false where the kernel tells none
// (no cpuidle). On a virtual machine whose idle CPUs halt at once (cpuidle
// haltpoll with guest_halt_poll_ns 0, as on the machine docs/benchmarks.md
// was measured on), each halt is a VM exit, and waking the CPU again takes
// an interrupt from another: a client that waits for Redis' reply with its
// CPU idle pays that on every round trip, whatever work it does.
func cpuHalts() (n int64, ok bool) {
	states, _ := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/cpuidle/state[0-9]*")
	for _, st := range states {
		name, err := os.ReadFile(filepath.Join(st, "name"))
		if err != nil || strings.TrimSpace(string(name)) == "POLL" {
			continue
		}
		usage, err := os.ReadFile(filepath.Join(st, "usage"))
		if err != nil {
			continue
		}
		if v, err := strconv.ParseInt(strings.TrimSpace(string(usage)), 10, 64); err == nil {
			n, ok = n+v, true
		}
	}
	return n, ok
}

// scriptCommands are the commands that run a script: the commands a script
// calls are counted in commandstats too, and their time is in the script's.
var scriptCommands = map[string]bool{
	"eval": true, "evalsha": true, "eval_ro": true, "evalsha_ro": true, "fcall": true, "fcall_ro": true,
}

func readUsage(b *testing.B, srv *redistest.Server, lib library) usage {
	s, err := srv.Do("INFO", "commandstats", "cpu", "stats").ToString()
	if err != nil {
		b.Fatal(err)
	}
	u := usage{calls: map[string]int64{}, usec: map[string]int64{}, sent: lib.sent()}
	u.halts, u.haltsRead = cpuHalts()
	for line := range strings.Lines(s) {
		key, value, _ := strings.Cut(strings.TrimSpace(line), ":")
		if cmd, ok := strings.CutPrefix(key, "cmdstat_"); ok {
			// calls=1,usec=17,usec_per_call=17.00,rejected_calls=0,failed_calls=0
			for field := range strings.SplitSeq(value, ",") {
				k, v, _ := strings.Cut(field, "=")
				n, _ := strconv.ParseInt(v, 10, 64)
				switch k {
				case "calls":
					u.calls[cmd] = n
				case "usec":
					u.usec[cmd] = n
				}
			}
		} else if key == "used_cpu_user" || key == "used_cpu_sys" {
			f, _ := strconv.ParseFloat(value, 64)
			u.cpu += time.Duration(f * float64(time.Second))
		} else if key == "total_commands_processed" {
			u.commands, _ = strconv.ParseInt(value, 10, 64)
		}
	}
	return u
}

// report reports what Redis did between since and u, per op of ops:
//
//   - redis-µs/op: INFO commandstats' time of the commands the library sent
//     (a script's includes the commands it calls; a command the library sent
//     and scripts called too counts for the calls the library made);
//   - redis-cpu-µs/op: the CPU time of redis-server, all of it, reading and
//     writing sockets too: what decides how many ops one Redis serves;
//   - scripts/op: EVAL, EVALSHA and FCALL calls Redis ran;
//   - cmds/op: the commands the library sent, scripts included;
//   - redis-cmds/op: the commands Redis ran (total_commands_processed), a
//     script's calls each counted: the work a script's one round trip
//     carries;
//   - halts/op: how often the machine's CPUs halted idle (cpuHalts), where
//     the kernel tells it: on a virtual machine, each is a wake-up that a
//     round trip may wait for, beyond the work of both ends.
//
// redis-server runs other work (its cron, 10 times a second), so these are
// exact only over many ops.
func (u usage) report(b *testing.B, since usage, ops int) {
	var usec, scripts, sent float64
	for cmd, calls := range u.calls {
		calls -= since.calls[cmd]
		if calls <= 0 {
			continue
		}
		share := min(1, float64(u.sent[cmd]-since.sent[cmd])/float64(calls))
		usec += share * float64(u.usec[cmd]-since.usec[cmd])
		if scriptCommands[cmd] {
			scripts += float64(calls)
		}
	}
	for cmd, n := range u.sent {
		sent += float64(n - since.sent[cmd])
	}
	per := func(v float64) float64 { return v / float64(ops) }
	b.ReportMetric(per(usec), "redis-µs/op")
	b.ReportMetric(per(float64((u.cpu-since.cpu).Nanoseconds())/1e3), "redis-cpu-µs/op")
	b.ReportMetric(per(scripts), "scripts/op")
	b.ReportMetric(per(sent), "cmds/op")
	b.ReportMetric(per(float64(u.commands-since.commands)), "redis-cmds/op")
	if u.haltsRead && since.haltsRead {
		b.ReportMetric(per(float64(u.halts-since.halts)), "halts/op")
	}
}

// 6. Network: the uncontended, distinct-keys and contended scenarios with
// Redis a network hop away, through a proxy that delays every byte by
// delay each way (the round trip grows by twice that, and by the proxy's
// own timer slack: ping reports the round trip it gives). Every library
// dials the proxy. Reports the throughput of the process (ops/s, or
// handoffs/s) and the p50 and p99 latency of an acquire+release (of a
// handoff). uncontended is one goroutine; distinct is 32, each on a lock of
// its own, whatever GOMAXPROCS.
func BenchmarkNetwork(b *testing.B) {
	srv := redistest.Start(b)
	for _, delay := range []struct {
		name string
		d    time.Duration
	}{{"250us", 250 * time.Microsecond}, {"1ms", time.Millisecond}} {
		b.Run("delay="+delay.name, func(b *testing.B) {
			// On the parent benchmark: go test runs a benchmark function
			// again for each b.N it tries, and its Cleanups after each run.
			p := redistest.NewProxy(b, srv.Addr())
			p.Delay(delay.d)
			for range max(*benchRounds, 1) {
				b.Run("ping", func(b *testing.B) { ping(b, p.Addr()) })
			}
			for _, sc := range []struct {
				name string
				run  func(b *testing.B, lib library)
			}{
				{"uncontended", func(b *testing.B, lib library) { pairs(b, lib, 1) }},
				{"distinct", func(b *testing.B, lib library) { pairs(b, lib, 32) }},
				{"contended", func(b *testing.B, lib library) { contended(b, srv, lib) }},
			} {
				b.Run(sc.name, func(b *testing.B) {
					eachOn(b, srv, p.Addr(), 30*time.Second, libraries, sc.run)
				})
			}
		})
	}
}

// ping reports the p50 and p99 of b.N PINGs to addr: the round trip itself.
func ping(b *testing.B, addr string) {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	ctx := context.Background()
	if err := rc.Do(ctx, rc.B().Ping().Build()).Error(); err != nil { // connected
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if err := rc.Do(ctx, rc.B().Ping().Build()).Error(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	percentiles(b, lat)
}

// BenchmarkRoundTrip times one PING on loopback by each transport the
// libraries use: rueidis' pipeline, whose writer and reader goroutines run
// once a subscription is on the connection (a leasehold Client's, always);
// rueidis' synchronous path, the caller writing and reading itself (a lone
// caller on a connection with no subscription, as rueidislock's when it
// does not wait, or a DisableAutoPipelining client's); and go-redis (redsync
// and redislock). It is what an uncontended acquire+release pays twice.
func BenchmarkRoundTrip(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()
	run := func(b *testing.B, do func() error) {
		if err := do(); err != nil { // connected
			b.Fatal(err)
		}
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			if err := do(); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		b.StopTimer()
		percentiles(b, lat)
	}
	rueidisClient := func(b *testing.B) rueidis.Client {
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(rc.Close)
		return rc
	}
	b.Run("rueidis-pipelined", func(b *testing.B) {
		rc := rueidisClient(b)
		subscribed := make(chan struct{})
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = rc.Receive(rueidis.WithOnSubscriptionHook(sctx, func(rueidis.PubSubSubscription) { close(subscribed) }),
				rc.B().Subscribe().Channel("roundtrip").Build(), func(rueidis.PubSubMessage) {})
		}()
		defer func() { cancel(); <-done }()
		<-subscribed
		run(b, func() error { return rc.Do(ctx, rc.B().Ping().Build()).Error() })
	})
	b.Run("rueidis-sync", func(b *testing.B) {
		rc := rueidisClient(b)
		run(b, func() error { return rc.Do(ctx, rc.B().Ping().Build()).Error() })
	})
	b.Run("go-redis", func(b *testing.B) {
		rdb := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
		defer rdb.Close()
		run(b, func() error { return rdb.Ping(ctx).Err() })
	})
}

// pairs runs b.N acquire+release pairs on g goroutines, each on a lock of
// its own, and reports the throughput of the process, ops/s, and the p50
// and p99 latency of a pair. Each goroutine makes one pair first, untimed
// and all at once, so that connection pools have grown and scripts are
// loaded when the clock starts.
func pairs(b *testing.B, lib library, g int) {
	ctx := context.Background()
	pair := func(name string) error {
		unlock, err := lib.lock(ctx, name)
		if err != nil {
			return err
		}
		unlock()
		return nil
	}
	names := make([]string, g)
	for w := range names {
		names[w] = "pairs-" + strconv.Itoa(w)
	}
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Go(func() {
			if err := pair(name); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		return
	}
	lats := make([][]time.Duration, g)
	var next atomic.Int64 // pairs begun, of b.N
	b.ResetTimer()
	start := time.Now()
	for w, name := range names {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				t := time.Now()
				if err := pair(name); err != nil {
					b.Error(err)
					return
				}
				lats[w] = append(lats[w], time.Since(t))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
	percentiles(b, slices.Concat(lats...))
}

// scaleFull runs the Scale benchmarks, and FairWaiters, over their full
// ranges.
var scaleFull = flag.Bool("scale", false, "run the Scale benchmarks and FairWaiters over their full ranges (bench.sh with SCALE=1 does); "+
	"without it each runs its first point only, so that CI's -benchtime=1x run stays short")

// scaleSizes is sizes with -scale, its first alone without.
func scaleSizes(sizes ...int) []int {
	if *scaleFull {
		return sizes
	}
	return sizes[:1]
}

// 7. Throughput vs goroutines, 1 to 256, each on a lock of its own, for
// every library (loopback). Reports ops/s and the p50 and p99 of a pair.
func BenchmarkScaleGoroutines(b *testing.B) {
	srv := redistest.Start(b)
	for _, g := range scaleSizes(1, 2, 4, 8, 16, 32, 64, 128, 256) {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			eachOn(b, srv, srv.Addr(), 30*time.Second, libraries, func(b *testing.B, lib library) { pairs(b, lib, g) })
		})
	}
}

// 8. Wake-ups vs waiters, 100 to 100,000, on one leasehold Client (one
// connection): see waiters. Reports the p50 and p99 wake-up latency, and the
// heap and goroutine stack per waiter once all wait.
func BenchmarkScaleWaiters(b *testing.B) {
	srv := redistest.Start(b)
	for _, n := range scaleSizes(100, 1000, 10000, 100000) {
		fx := &waiters{}
		b.Run(fmt.Sprintf("waiters=%d", n), func(b *testing.B) {
			// go test runs this function again for each b.N it tries:
			// the waiters are set up by the first run, for all.
			if fx.lib == nil {
				fx.start(b, srv, n)
			}
			fx.run(b)
		})
		fx.close()
	}
}

// waiters is n goroutines on one leasehold Client, ten per lock, waiting for
// n/10 locks that the same Client holds. An op releases one of the held
// locks, in turn, and ends when one of its waiters holds it: the wake-up
// latency runs from the release call to the waiter's Acquire returning. The
// woken waiter's lease becomes the lock's held lease and its goroutine waits
// again at once, so n goroutines wait throughout.
type waiters struct {
	lib    *leaseholdLib
	locks  []lease.Locker
	held   []*lease.Lease // each lock's lease, released by the next op on it
	grants chan grant
	cancel context.CancelFunc
	wg     sync.WaitGroup
	next   int // the lock the next op releases

	heap, stack float64 // per waiter, once all wait
}

// grant is a waiter's acquisition: the lock, when Acquire returned, and the
// lease (or the error that ended the waiter).
type grant struct {
	lock  int
	at    time.Time
	lease *lease.Lease
	err   error
}

func (fx *waiters) start(b *testing.B, srv *redistest.Server, n int) {
	srv.Do("FLUSHALL")
	fx.lib = openLeasehold(b, leaseholdOption(srv.Addr()), 30*time.Second, rlockKind{})
	ctx, cancel := context.WithCancel(context.Background())
	fx.cancel = cancel
	fx.grants = make(chan grant)
	for k := range max(1, n/10) {
		l, err := fx.lib.get(ctx, fmt.Sprintf("waited-%d", k))
		if err != nil {
			b.Fatal(err)
		}
		ls, err := l.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		fx.locks, fx.held = append(fx.locks, l), append(fx.held, ls)
	}
	heap, stack := memInUse()
	for i := range n {
		fx.wg.Go(func() { fx.wait(ctx, i%len(fx.locks)) })
	}
	deadline := time.Now().Add(5 * time.Minute)
	for fx.lib.c.Stats().Waiters < n {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d waiters waiting after 5m", fx.lib.c.Stats().Waiters, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	heap2, stack2 := memInUse()
	fx.heap = (float64(heap2) - float64(heap)) / float64(n)
	fx.stack = (float64(stack2) - float64(stack)) / float64(n)
}

// wait takes lock k again and again, handing each lease to the benchmark,
// until ctx ends.
func (fx *waiters) wait(ctx context.Context, k int) {
	for {
		ls, err := fx.locks[k].Acquire(ctx)
		if err != nil && ctx.Err() != nil {
			return
		}
		select {
		case fx.grants <- grant{lock: k, at: time.Now(), lease: ls, err: err}:
			if err != nil {
				return
			}
		case <-ctx.Done():
			if ls != nil {
				_ = ls.Release(context.Background())
			}
			return
		}
	}
}

func (fx *waiters) run(b *testing.B) {
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		k := fx.next % len(fx.locks)
		fx.next++
		start := time.Now()
		if err := fx.held[k].Release(ctx); err != nil {
			b.Fatal(err)
		}
		fx.held[k] = nil
		g := <-fx.grants
		if g.err != nil {
			b.Fatal(g.err)
		}
		if g.lock != k {
			b.Fatalf("released lock %d, a waiter got %d", k, g.lock)
		}
		fx.held[k] = g.lease
		lat = append(lat, g.at.Sub(start))
	}
	b.StopTimer()
	percentiles(b, lat)
	b.ReportMetric(fx.heap, "heapB/waiter")
	b.ReportMetric(fx.stack, "stackB/waiter")
}

// close stops the waiters, releases the held locks and closes the Client;
// it does nothing when start never ran.
func (fx *waiters) close() {
	if fx.lib == nil {
		return
	}
	fx.cancel()
	fx.wg.Wait()
	for _, ls := range fx.held {
		if ls != nil {
			_ = ls.Release(context.Background())
		}
	}
	fx.lib.close()
}

func memInUse() (heap, stack uint64) {
	// Each GC halves at most a goroutine stack that uses a quarter of it,
	// so the stacks of the goroutines already there (rueidis', the last
	// fixture's that ended) may take several to settle; until they do, their
	// shrinking hides a hundred new waiters' stacks.
	var m runtime.MemStats
	for i := 0; i < 10; i++ {
		runtime.GC()
		prev := m.StackInuse
		runtime.ReadMemStats(&m)
		if i > 0 && m.StackInuse >= prev {
			break
		}
	}
	return m.HeapAlloc, m.StackInuse
}

// 9. Keeper vs held leases, 1,000 to 100,000 watchdog leases on one
// leasehold Client, renewed every ttl/3: ttl is 9s with -scale (100,000
// renewals every 3s keep one Redis core a quarter busy, not saturated), 3s
// without. An op is two renewal ticks, timed from halfway between two rounds
// so that each round in the window is whole: reports per tick the round
// trips, this process's CPU time (the keeper's and rueidis'), Redis' CPU
// time and the scripts Redis ran.
func BenchmarkScaleRenewal(b *testing.B) {
	const ticks = 2
	ttl := 3 * time.Second
	if *scaleFull {
		ttl = 9 * time.Second
	}
	srv := redistest.Start(b)
	for _, n := range scaleSizes(1000, 10000, 100000) {
		var lib *leaseholdLib
		// nextRound returns once the keeper begins a renewal round.
		nextRound := func(b *testing.B) {
			r := lib.c.Stats().RenewalRounds // counted when a round begins
			deadline := time.Now().Add(ttl)
			for lib.c.Stats().RenewalRounds == r {
				if time.Now().After(deadline) {
					b.Fatalf("no renewal round in %v", ttl)
				}
				time.Sleep(time.Millisecond)
			}
		}
		b.Run(fmt.Sprintf("leases=%d", n), func(b *testing.B) {
			if lib == nil { // once, for every b.N go test tries
				srv.Do("FLUSHALL")
				lib = openLeasehold(b, leaseholdOption(srv.Addr()), ttl, rlockKind{})
				holdMany(b, lib, n)
				nextRound(b) // the first round loads lock_renew (NOSCRIPT, then EVAL)
			}
			// Not in the window: collecting, and giving back to the OS, the
			// memory of what ran before (100,000 waiters' stacks).
			debug.FreeOSMemory()
			nextRound(b)
			time.Sleep(ttl / 3 / 2)
			rounds, cpu, before := lib.rounds(), cpuTime(), readUsage(b, srv, lib)
			b.ResetTimer()
			time.Sleep(time.Duration(b.N*ticks) * ttl / 3)
			b.StopTimer()
			after := readUsage(b, srv, lib)
			per := float64(b.N * ticks)
			var scripts int64
			for cmd := range scriptCommands {
				scripts += after.calls[cmd] - before.calls[cmd]
			}
			b.ReportMetric(float64(lib.rounds()-rounds)/per, "roundtrips/tick")
			b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1e3/per, "cpu-ms/tick")
			b.ReportMetric(float64((after.cpu-before.cpu).Microseconds())/1e3/per, "redis-cpu-ms/tick")
			b.ReportMetric(float64((after.cpu-before.cpu).Microseconds())/1e3/(per*(ttl/3).Seconds()), "redis-cpu-ms/s")
			b.ReportMetric(float64(scripts)/per, "scripts/tick")
			heap, stack := memInUse()
			b.ReportMetric(float64(heap+stack)/(1<<20), "client-MiB")
		})
		if lib != nil {
			lib.close() // releases the leases
		}
	}
}

// holdMany takes n locks on lib, 16 at a time, held until lib closes.
func holdMany(b *testing.B, lib library, n int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				if _, err := lib.renewing(context.Background(), "renewed-"+strconv.FormatInt(i, 10)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// scriptsDir is where TestWriteLockScripts writes.
var scriptsDir = flag.String("baseline.scripts", "", "directory where TestWriteLockScripts writes lock_acquire.lua and lock_release_all.lua")

// TestWriteLockScripts writes the lock scripts as Redis runs them, with
// their includes spliced in, for bench.sh's redis-benchmark baseline:
//
//	go test -run '^TestWriteLockScripts$' -baseline.scripts DIR .
//
// Without -baseline.scripts it does nothing.
func TestWriteLockScripts(t *testing.T) {
	if *scriptsDir == "" {
		t.Skip("no -baseline.scripts directory")
	}
	for _, name := range []string{"lock_acquire", "lock_release_all"} {
		i := slices.IndexFunc(script.All(), func(s script.Script) bool { return s.Name == name })
		s, ok := script.Script{}, i >= 0
		if ok {
			s = script.All()[i]
		}
		if !ok {
			t.Fatalf("no script %s", name)
		}
		if err := os.WriteFile(filepath.Join(*scriptsDir, s.Name+".lua"), []byte(s.Source), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
