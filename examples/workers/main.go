// Command workers runs an errgroup of workers that take jobs from a queue in
// Redis and do each under a lease on the job's lock, stopping the moment the
// lease is lost.
//
// The jobs sync tenants. The scheduler queued some tenants twice (as
// schedulers do after a retry), so two workers may pick up the same tenant:
// the second finds the lock held and skips it, or finds the tenant synced
// already. Midway an operator force-releases the lock of one tenant being
// synced (as a failover can lose a lock); its worker sees <-lease.Lost()
// fire, stops that job without finishing it and queues it again, and a
// worker does it again later.
//
// Every lease event is counted in an expvar map, "leasehold", printed at the
// end and served at /debug/vars with -http; -v logs each event with
// log/slog (lease.SlogObserver).
//
// It exits non-zero unless every tenant was synced exactly once, no two
// workers ever worked on one tenant at once, and the one lost lease stopped
// its job.
//
// It uses the Redis at $REDIS_ADDR, or starts a redis-server of its own on a
// free loopback port and stops it on the way out.
//
//	go run ./examples/workers
//	go run ./examples/workers -v -http localhost:8080   # then: curl localhost:8080/debug/vars
package main

import (
	"context"
	"errors"
	"expvar"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/redis/rueidis"
	"golang.org/x/sync/errgroup"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

var (
	workers  = flag.Int("workers", 4, "workers in the errgroup")
	tenants  = flag.Int("tenants", 10, "tenants to sync (jobs)")
	steps    = flag.Int("steps", 8, "steps per job")
	step     = flag.Duration("step", 60*time.Millisecond, "time one step of a job takes")
	watchdog = flag.Duration("watchdog", 450*time.Millisecond, "lease of each job, renewed every third of it")
	httpAddr = flag.String("http", "", "serve expvar's /debug/vars on this address until interrupted")
	verbose  = flag.Bool("v", false, "log every lease event with log/slog")
)

// Keys of the job queue and of the tenants synced, in Redis.
const (
	queueKey  = "jobs:queue"
	syncedKey = "jobs:synced"
)

// counters counts lease events by kind, as expvar "leasehold".
var counters = expvar.NewMap("leasehold")

func main() {
	log.SetFlags(0)
	flag.Parse()
	if err := withRedis(run); err != nil {
		log.Fatal(err)
	}
}

func run(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // bounds the whole run
	defer cancel()
	// One Observer can only be given: count every event, and log it too
	// with -v.
	logged := lease.SlogObserver(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})))
	observe := lease.ObserverFunc(func(e lease.Event) {
		counters.Add(string(e.Kind), 1)
		if *verbose {
			logged.Observe(e)
		}
	})
	// One rueidis client, for the queue and, wrapped by leasehold.New (whose
	// Close leaves it open), for the locks.
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		return err
	}
	defer rc.Close()
	c, err := leasehold.New(rc, leasehold.WithWatchdog(*watchdog), leasehold.WithObserver(observe))
	if err != nil {
		return err
	}
	defer c.Close()

	// The queue: every tenant once, and the 3rd and 7th twice.
	var jobs []string
	for i := 1; i <= *tenants; i++ {
		jobs = append(jobs, fmt.Sprintf("tenant-%d", i))
		if i == 3 || i == 7 {
			jobs = append(jobs, fmt.Sprintf("tenant-%d", i))
		}
	}
	victim := fmt.Sprintf("tenant-%d", (*tenants+1)/2)
	if err := rc.Do(ctx, rc.B().Del().Key(queueKey, syncedKey).Build()).Error(); err != nil {
		return err
	}
	if err := rc.Do(ctx, rc.B().Rpush().Key(queueKey).Element(jobs...).Build()).Error(); err != nil {
		return err
	}
	fmt.Printf("%d jobs queued for %d workers; each job %d steps of %v under a %v lease renewed every %v\n",
		len(jobs), *workers, *steps, *step, *watchdog, *watchdog/3)

	w := &pool{rc: rc, c: c, running: map[string]int{}, synced: map[string]int{}}
	g, gctx := errgroup.WithContext(ctx)
	for id := 1; id <= *workers; id++ {
		g.Go(func() error { return w.work(gctx, id) })
	}
	g.Go(func() error { return operator(gctx, addr, victim) })
	if err := g.Wait(); err != nil {
		return err
	}

	fmt.Printf("lease events (expvar leasehold): %s\n", counters.String())
	var failed []string
	for i := 1; i <= *tenants; i++ {
		if n := w.synced[fmt.Sprintf("tenant-%d", i)]; n != 1 {
			failed = append(failed, fmt.Sprintf("tenant-%d synced %d times", i, n))
		}
	}
	if w.overlaps > 0 {
		failed = append(failed, fmt.Sprintf("%d times two workers worked on one tenant", w.overlaps))
	}
	if w.stopped != 1 {
		failed = append(failed, fmt.Sprintf("%d jobs stopped on a lost lease, want 1", w.stopped))
	}
	if len(failed) > 0 {
		return fmt.Errorf("FAILED: %v", failed)
	}
	fmt.Printf("ok: all %d tenants synced exactly once, never two workers on one; the lost lease stopped its job, which was done again\n", *tenants)
	if *httpAddr != "" {
		return serveVars(*httpAddr)
	}
	return nil
}

// pool is the workers' shared bookkeeping, which checks the example's claims.
type pool struct {
	rc rueidis.Client
	c  *leasehold.Client

	mu       sync.Mutex
	running  map[string]int // tenant -> workers on it now
	synced   map[string]int // tenant -> times synced to the end
	overlaps int
	stopped  int
}

// work takes jobs until the queue is empty.
func (p *pool) work(ctx context.Context, id int) error {
	for {
		tenant, err := p.rc.Do(ctx, p.rc.B().Lpop().Key(queueKey).Build()).ToString()
		if rueidis.IsRedisNil(err) {
			return nil // the queue is empty
		}
		if err != nil {
			return err
		}
		if err := p.job(ctx, id, tenant); err != nil {
			return err
		}
	}
}

// job syncs tenant under a lease on its lock, unless another worker holds it
// or it was synced already.
func (p *pool) job(ctx context.Context, id int, tenant string) error {
	l, err := rlock.New(p.c, "sync:"+tenant).TryAcquire(ctx)
	if errors.Is(err, lease.ErrNotAcquired) {
		fmt.Printf("worker %d: %s is being synced by another worker: skipped\n", id, tenant)
		return nil
	}
	if err != nil {
		return err
	}
	defer l.Release(context.WithoutCancel(ctx))
	// Checked under the lock: a duplicate taken after the first was done
	// finds it done.
	done, err := p.rc.Do(ctx, p.rc.B().Hexists().Key(syncedKey).Field(tenant).Build()).AsBool()
	if err != nil || done {
		if done {
			fmt.Printf("worker %d: %s synced already: skipped\n", id, tenant)
		}
		return err
	}

	p.mu.Lock()
	if p.running[tenant]++; p.running[tenant] > 1 {
		p.overlaps++
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.running[tenant]--
		p.mu.Unlock()
	}()

	for s := 1; s <= *steps; s++ {
		select {
		case <-l.Lost():
			return p.giveBack(ctx, id, tenant, fmt.Sprintf("during step %d", s), l)
		case <-time.After(*step): // one step of the sync
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// Recorded under the lease's context, so that a lease lost by now
	// cancels the write; the token says which holder wrote it.
	err = p.rc.Do(l.Context(), p.rc.B().Hset().Key(syncedKey).FieldValue().FieldValue(tenant, fmt.Sprint(l.Token())).Build()).Error()
	if l.Err() != nil {
		return p.giveBack(ctx, id, tenant, "as it finished", l)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", tenant, err)
	}
	p.mu.Lock()
	p.synced[tenant]++
	p.mu.Unlock()
	fmt.Printf("worker %d: synced %s (token %d)\n", id, tenant, l.Token())
	return nil
}

// giveBack stops a job whose lease was lost: the lock may be someone else's
// now, so nothing more is done or recorded, and the job is queued again.
func (p *pool) giveBack(ctx context.Context, id int, tenant, when string, l *lease.Lease) error {
	p.mu.Lock()
	p.stopped++
	p.mu.Unlock()
	fmt.Printf("worker %d: lost %s %s (%v): stopped; job queued again\n", id, tenant, when, l.Err())
	return p.rc.Do(context.WithoutCancel(ctx), p.rc.B().Rpush().Key(queueKey).Element(tenant).Build()).Error()
}

// operator force-releases the victim's lock once a worker is a step into
// it, as an operator (or a failover) can take a lock away.
func operator(ctx context.Context, addr, victim string) error {
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		return err
	}
	defer c.Close()
	lock := rlock.New(c, "sync:"+victim)
	for {
		ttl, err := lock.RemainTTL(ctx)
		if err != nil {
			return err
		}
		if ttl > 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	time.Sleep(*step)
	// Said before: the worker hears of the loss (an invalidation on its
	// own connection) as soon as ForceRelease's reply reaches this one.
	fmt.Printf("operator: force-releasing the lock of %s\n", victim)
	_, err = lock.ForceRelease(ctx)
	return err
}

// serveVars serves expvar's /debug/vars on addr until interrupted.
func serveVars(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: expvar.Handler()}
	fmt.Printf("serving the counters at http://%s/debug/vars; ^C to stop\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
