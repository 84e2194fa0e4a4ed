package bench_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
)

// fairQueueTimeout is leasehold.WithQueueTimeout's default, which the
// waiters keep: a waiter refreshes its place at least every third of it.
const fairQueueTimeout = 5 * time.Second

// 10. Fair waiters keeping their places: n fairqueue waiters on one
// leasehold Client (default queue timeout) wait for locks that another
// Client holds throughout, under a fixed lease of an hour so that nothing
// renews it: one lock per 100 waiters (locks=n/100) or all on one (locks=1).
// Nothing is released, so all Redis does is what keeps the waiters in their
// queues. An op is two refresh periods (queue timeout / 3), timed from half a
// period after the last waiter joined its queue. Reports per second of the
// window what Redis ran:
//
//   - cmds/s: total_commands_processed, the commands scripts call included;
//   - scripts/s: EVAL, EVALSHA and FCALL calls;
//   - script-cmds/s: the commands scripts called (cmds/s less the commands
//     the two Clients sent);
//   - roundtrips/s: the waiters' Client's round trips;
//   - redis-cpu-ms/s: redis-server's CPU time.
//
// 500 waiters run always, 5,000 with -scale.
func BenchmarkFairWaiters(b *testing.B) {
	srv := redistest.Start(b)
	for _, n := range scaleSizes(500, 5000) {
		for _, locks := range []int{max(1, n/100), 1} {
			fx := &fairWaiters{}
			b.Run(fmt.Sprintf("waiters=%d/locks=%d", n, locks), func(b *testing.B) {
				// go test runs this function again for each b.N it tries:
				// the waiters are set up by the first run, for all.
				if fx.waiters == nil {
					fx.start(b, srv, n, locks)
				}
				fx.run(b, srv)
			})
			fx.close()
		}
	}
}

// fairWaiters is BenchmarkFairWaiters' fixture: the holding Client and its
// leases, and the waiting Client and its waiters.
type fairWaiters struct {
	holder, waiters *leaseholdLib
	held            []*lease.Lease
	cancel          context.CancelFunc
	wg              sync.WaitGroup
	failed          atomic.Pointer[error] // the first waiter's unexpected end
	joined          time.Time             // when the last waiter was in its queue
}

func (fx *fairWaiters) start(b *testing.B, srv *redistest.Server, n, locks int) {
	srv.Do("FLUSHALL")
	fx.holder = openLeasehold(b, leaseholdOption(srv.Addr()), 30*time.Second, fairKind{})
	fx.waiters = openLeasehold(b, leaseholdOption(srv.Addr()), 30*time.Second, fairKind{})
	ctx, cancel := context.WithCancel(context.Background())
	fx.cancel = cancel
	names := make([]string, locks)
	for k := range names {
		names[k] = fmt.Sprintf("fair-%d", k)
		ls, err := fairqueue.New(fx.holder.c, names[k], leasehold.WithLeaseTime(time.Hour)).Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		fx.held = append(fx.held, ls)
	}
	for i := range n {
		fx.wg.Go(func() {
			err := fx.wait(ctx, names[i%locks])
			if err != nil && ctx.Err() == nil {
				fx.failed.CompareAndSwap(nil, &err)
			}
		})
	}
	// Joined when every waiter is in a queue, as Redis has it.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var queued int64
		for _, name := range names {
			l, err := srv.Do("LLEN", "redisson_lock_queue:{"+name+"}").AsInt64()
			if err != nil {
				b.Fatal(err)
			}
			queued += l
		}
		if queued == int64(n) {
			break
		}
		if p := fx.failed.Load(); p != nil {
			b.Fatal(*p)
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d waiters queued after 2m", queued, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	fx.joined = time.Now()
}

// wait waits for name until ctx ends; taking it is an error, since its
// holder never lets go.
func (fx *fairWaiters) wait(ctx context.Context, name string) error {
	l, err := fx.waiters.get(ctx, name)
	if err != nil {
		return err
	}
	ls, err := l.Acquire(ctx)
	if err != nil {
		return err
	}
	_ = ls.Release(context.Background())
	return errors.New("a waiter took a lock that is held throughout")
}

func (fx *fairWaiters) run(b *testing.B, srv *redistest.Server) {
	const ticks = 2
	refresh := fairQueueTimeout / 3
	// Begin half a period after a refresh of the waiters that joined last,
	// so that refreshes fall inside the window, not on its edges.
	since := time.Since(fx.joined)
	time.Sleep(refresh/2 + (refresh-since%refresh)%refresh)
	before, holderSent, rounds := readUsage(b, srv, fx.waiters), fx.holder.sent(), fx.waiters.rounds()
	start := time.Now()
	b.ResetTimer()
	time.Sleep(time.Duration(b.N*ticks) * refresh)
	b.StopTimer()
	secs := time.Since(start).Seconds()
	after := readUsage(b, srv, fx.waiters)
	if p := fx.failed.Load(); p != nil {
		b.Fatal(*p)
	}
	var scripts, sent int64
	for cmd := range scriptCommands {
		scripts += after.calls[cmd] - before.calls[cmd]
	}
	for cmd, n := range after.sent {
		sent += n - before.sent[cmd]
	}
	for cmd, n := range fx.holder.sent() {
		sent += n - holderSent[cmd]
	}
	cmds := after.commands - before.commands - 1 // not the INFO that read before
	b.ReportMetric(float64(cmds)/secs, "cmds/s")
	b.ReportMetric(float64(scripts)/secs, "scripts/s")
	b.ReportMetric(float64(cmds-sent)/secs, "script-cmds/s")
	b.ReportMetric(float64(fx.waiters.rounds()-rounds)/secs, "roundtrips/s")
	b.ReportMetric(float64((after.cpu-before.cpu).Microseconds())/1e3/secs, "redis-cpu-ms/s")
}

// close stops the waiters, releases the held locks and closes both Clients;
// it does nothing when start never ran.
func (fx *fairWaiters) close() {
	if fx.waiters == nil {
		return
	}
	fx.cancel()
	fx.wg.Wait()
	for _, ls := range fx.held {
		_ = ls.Release(context.Background())
	}
	fx.waiters.close()
	fx.holder.close()
}
