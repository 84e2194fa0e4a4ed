package leasehold_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/rw"
	"github.com/leasehold/leasehold/semaphore"
)

// busyScript runs on srv, from a connection of its own, a script that spins
// for d: past lua-time-limit (the servers of these tests set 100ms) Redis
// answers every other command with BUSY. It returns once PING is answered
// BUSY, and the returned func waits for the script to end.
func busyScript(t *testing.T, srv *redistest.Server, d time.Duration) (wait func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A script that ends on its own: SCRIPT KILL would make it end
		// with an error, which Do would report.
		_ = srv.Do("EVAL", `local t = redis.call('time')
local stop = tonumber(t[1]) * 1000000 + tonumber(t[2]) + tonumber(ARGV[1])
while true do
  local n = redis.call('time')
  if tonumber(n[1]) * 1000000 + tonumber(n[2]) >= stop then return 1 end
end`, "0", strconv.FormatInt(d.Microseconds(), 10))
	}()
	rc := srv.Client()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := rc.Do(context.Background(), rc.B().Ping().Build()).Error()
		if err != nil && strings.HasPrefix(err.Error(), "BUSY") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never answered BUSY (last: %v)", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return func() { <-done }
}

// numsub is how many connections srv counts as subscribed to channel.
func numsub(t *testing.T, srv *redistest.Server, channel string) int64 {
	t.Helper()
	v, err := srv.Do("PUBSUB", "NUMSUB", channel).ToArray()
	if err != nil || len(v) != 2 {
		t.Fatalf("PUBSUB NUMSUB %s: %v %v", channel, v, err)
	}
	n, err := v[1].AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The last waiter on a lock leaving while a foreign script keeps Redis BUSY
// used to send UNSUBSCRIBE into the BUSY replies, which rueidis (v1.0.79)
// miscounts: its reader goroutine panicked with "protocol bug, message handled
// out of order" and took the process down. The Client now keeps the
// subscription until Redis answers again, then drops it.
func TestBusyScriptWaiterLeaves(t *testing.T) {
	srv := redistest.Start(t, "--lua-time-limit", "100")
	c := locktest.Open(t, srv)
	ctx := context.Background()
	held, err := rlock.New(c, "busy-leave").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A waiter subscribes to the lock's channel, then gives up during the
	// busy script: its leaving drops the subscription.
	wctx, cancel := context.WithCancel(ctx)
	waited := make(chan error, 1)
	go func() {
		_, err := rlock.New(c, "busy-leave").Acquire(wctx)
		waited <- err
	}()
	channel := "redisson_lock__channel:{busy-leave}"
	locktest.Eventually(t, 5*time.Second, "the waiter's subscription", func() bool { return numsub(t, srv, channel) == 1 })

	end := busyScript(t, srv, 1500*time.Millisecond)
	cancel()
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiter: %v, want context.Canceled", err)
	}
	// The process is alive (a panic on rueidis' goroutine would have ended
	// the test binary); the connection still answers in order once the
	// script ends, and the subscription is gone then.
	end()
	locktest.Eventually(t, 5*time.Second, "the subscription dropped after the script", func() bool { return numsub(t, srv, channel) == 0 })
	if err := held.Release(ctx); err != nil {
		t.Fatalf("release after the busy script: %v", err)
	}
	l, err := rlock.New(c, "busy-leave").TryAcquire(ctx)
	if err != nil {
		t.Fatalf("try-acquire after the busy script: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// BUSY is a pause, not a refusal: an Acquire begun during a foreign busy
// script waits it out and takes the lock once it ends, while TryAcquire, one
// attempt, fails at once with the reply wrapped in lease.ErrRedis. A holder
// keeps its lease through the script (its renewals are retried, its local
// deadline is far away).
func TestBusyScriptIsAPause(t *testing.T) {
	srv := redistest.Start(t, "--lua-time-limit", "100")
	c := locktest.Open(t, srv)
	ctx := context.Background()
	other, err := rlock.New(c, "busy-other").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}

	end := busyScript(t, srv, 1500*time.Millisecond)
	_, err = rlock.New(c, "busy-pause").TryAcquire(ctx)
	if !errors.Is(err, lease.ErrRedis) || !strings.Contains(err.Error(), "BUSY") {
		t.Errorf("TryAcquire during the script: %v, want lease.ErrRedis with BUSY", err)
	}
	// 10s: far more than the script's 1.5s, so only giving up on BUSY fails.
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l, err := rlock.New(c, "busy-pause").Acquire(actx)
	end()
	if err != nil {
		t.Fatalf("Acquire begun during the script: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-other.Lost():
		t.Fatalf("a holder lost its lease to a 1.5s busy script: %v", other.Err())
	default:
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// When the ctx ends first, the error carries the last reply. 2s: a
	// busy server answers only between stretches of its script, which take
	// longer on a loaded machine (1s once saw no answer at all while other
	// suites ran beside it); 4s of script outlast it.
	end = busyScript(t, srv, 4*time.Second)
	defer end()
	sctx, cancel2 := context.WithTimeout(ctx, 2*time.Second)
	defer cancel2()
	if _, err := rlock.New(c, "busy-pause").Acquire(sctx); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "BUSY") {
		t.Errorf("Acquire whose ctx ends during the script: %v, want DeadlineExceeded naming BUSY", err)
	}
}

// A Client opened on a replica's address is misconfigured: Open (and New)
// fail at once with lease.ErrRedis rather than every Acquire retrying
// READONLY until its ctx ends.
func TestOpenOnReplica(t *testing.T) {
	primary := redistest.Start(t)
	replica := redistest.Start(t, "--replicaof", "127.0.0.1", strconv.Itoa(primary.Port()))
	c, err := leasehold.Open(replica.Option())
	if err == nil {
		c.Close()
		t.Fatal("Open on a replica succeeded")
	}
	if !errors.Is(err, lease.ErrRedis) || !strings.Contains(err.Error(), replica.Addr()+" is a read-only replica") ||
		!strings.Contains(err.Error(), primary.Addr()) {
		t.Errorf("Open on a replica: %v, want lease.ErrRedis naming the replica and its primary", err)
	}
	rc := replica.Client()
	if c, err := leasehold.New(rc); !errors.Is(err, lease.ErrRedis) || !strings.Contains(err.Error(), replica.Addr()) {
		if c != nil {
			c.Close()
		}
		t.Errorf("New on a replica: %v, want lease.ErrRedis", err)
	}
	// The primary itself opens.
	c, err = leasehold.Open(primary.Option())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// warnings collects the Warning events a Client's Observer hears.
type warnings struct {
	mu   sync.Mutex
	errs []error
}

func (w *warnings) Observe(e lease.Event) {
	if e.Kind == lease.Warning {
		w.mu.Lock()
		w.errs = append(w.errs, e.Err)
		w.mu.Unlock()
	}
}

func (w *warnings) list() []error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]error(nil), w.errs...)
}

// A memory policy that can evict lock keys (any but noeviction, once a
// maxmemory is set) is warned of once, at Open, and shown in Stats; volatile
// policies evict keys with a TTL, as every lock key has, first.
func TestMemoryPolicyWarning(t *testing.T) {
	for _, tt := range []struct {
		args []string
		warn bool
	}{
		{[]string{"--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"}, true},
		{[]string{"--maxmemory", "64mb", "--maxmemory-policy", "volatile-ttl"}, true},
		{[]string{"--maxmemory", "64mb", "--maxmemory-policy", "noeviction"}, false},
		{[]string{"--maxmemory", "0", "--maxmemory-policy", "allkeys-lru"}, false}, // no limit: nothing is evicted
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			srv := redistest.Start(t, tt.args...)
			var w warnings
			c, err := leasehold.Open(srv.Option(), leasehold.WithObserver(&w))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			got := w.list()
			if want := tt.args[3]; c.Stats().MemoryPolicy != want {
				t.Errorf("Stats().MemoryPolicy = %q, want %q", c.Stats().MemoryPolicy, want)
			}
			switch {
			case tt.warn && (len(got) != 1 || !strings.Contains(got[0].Error(), "maxmemory-policy "+tt.args[3])):
				t.Errorf("warnings %v, want one naming maxmemory-policy %s", got, tt.args[3])
			case !tt.warn && len(got) != 0:
				t.Errorf("warnings %v, want none", got)
			}
		})
	}
}

// An ACL that refuses SUBSCRIBE leaves waiters to wake on invalidations and
// their timers: the Client says so, once, however many channels it tries;
// waiters still get the lock when it is released. One that refuses PUBLISH
// is warned of at Open.
func TestRefusedPubSubWarns(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()

	var w warnings
	c, err := leasehold.Open(locktest.Denied(t, srv, "subscribe"), leasehold.WithObserver(&w))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var held []*lease.Lease
	for i := range 3 {
		l, err := rlock.New(c, "nosub-"+strconv.Itoa(i)).Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	// 10s: the waiters' fallback wake-ups come about once a second.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(held))
	for i := range held {
		wg.Go(func() {
			l, err := rlock.New(c, "nosub-"+strconv.Itoa(i)).Acquire(wctx)
			if err == nil {
				err = l.Release(ctx)
			}
			errs <- err
		})
	}
	locktest.Eventually(t, 5*time.Second, "a warning of the refused subscription", func() bool { return len(w.list()) > 0 })
	for _, l := range held {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("waiter without subscriptions: %v", err)
		}
	}
	if got := w.list(); len(got) != 1 || !strings.Contains(got[0].Error(), "subscribing") || !strings.Contains(got[0].Error(), "NOPERM") {
		t.Errorf("warnings %v, want exactly one about the refused subscription", got)
	}

	var wp warnings
	cp, err := leasehold.Open(locktest.Denied(t, srv, "publish"), leasehold.WithObserver(&wp))
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	if got := wp.list(); len(got) != 1 || !strings.Contains(got[0].Error(), "PUBLISH is refused") {
		t.Errorf("warnings %v, want one about the refused PUBLISH", got)
	}
}

// An OOM reply under noeviction is a pause for a waiter: Redis refuses a
// script's first write when memory is full, so nothing was written, and the
// attempt may pass once memory frees. An Acquire begun while memory is full
// takes the lock once a key is deleted.
func TestOOMIsAPause(t *testing.T) {
	srv := redistest.Start(t, "--maxmemory-policy", "noeviction")
	c := locktest.Open(t, srv)
	ctx := context.Background()
	if err := srv.Do("SET", "filler", strings.Repeat("x", 4<<20)).Error(); err != nil {
		t.Fatal(err)
	}
	info, err := srv.Do("INFO", "memory").ToString()
	if err != nil {
		t.Fatal(err)
	}
	used := infoInt(t, info, "used_memory")
	if err := srv.Do("CONFIG", "SET", "maxmemory", strconv.FormatInt(used-(1<<20), 10)).Error(); err != nil {
		t.Fatal(err)
	}
	oomBefore := oomErrors(t, srv)
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		l, err := rlock.New(c, "oom-pause").Acquire(actx)
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	locktest.Eventually(t, 5*time.Second, "an attempt refused with OOM", func() bool { return oomErrors(t, srv) > oomBefore })
	if _, err := rlock.New(c, "oom-pause").TryAcquire(ctx); !errors.Is(err, lease.ErrRedis) || !strings.Contains(err.Error(), "OOM") {
		t.Errorf("TryAcquire with memory full: %v, want lease.ErrRedis naming OOM", err)
	}
	if err := srv.Do("DEL", "filler").Error(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("Acquire begun with memory full, after memory freed: %v", err)
	}
}

// infoInt reads the integer field of an INFO reply.
func infoInt(t *testing.T, info, field string) int64 {
	t.Helper()
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("INFO has no %s", field)
	return 0
}

// oomErrors is how many error replies srv has sent (INFO stats'
// total_error_replies): Redis 6.2 reports an OOM met by a script as a
// script error, so the count is of all of them; the test sends no other.
func oomErrors(t *testing.T, srv *redistest.Server) int64 {
	t.Helper()
	info, err := srv.Do("INFO", "stats").ToString()
	if err != nil {
		t.Fatal(err)
	}
	return infoInt(t, info, "total_error_replies")
}

// README's least ACL for a lock user: every lock kind works under it, waiters
// are woken by unlock messages, holders hear of removals at once
// (Stats().Tracking), and the Client warns of nothing.
func TestLeastACL(t *testing.T) {
	srv := redistest.Start(t)
	rules := []string{"ACL", "SETUSER", "locks", "on", ">pw", "~*", "&*", "+@all", "-@dangerous", "+info", "+client|tracking", "+client|caching"}
	if err := srv.Do(rules...).Error(); err != nil {
		t.Fatal(err)
	}
	opt := srv.Option()
	opt.Username, opt.Password = "locks", "pw"
	var w warnings
	c := locktest.OpenAt(t, opt, leasehold.WithObserver(&w))
	if !c.Stats().Tracking {
		t.Error("Stats().Tracking = false under the least ACL")
	}
	ctx := context.Background()
	l, err := rlock.New(c, "acl-least").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		l2, err := rlock.New(c, "acl-least").Acquire(wctx)
		if err == nil {
			err = l2.Release(ctx)
		}
		got <- err
	}()
	locktest.Eventually(t, 5*time.Second, "a waiter", func() bool { return c.Stats().Waiters == 1 })
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	sem := semaphore.New(c, "acl-least-sem")
	if _, err := sem.TrySetPermits(ctx, 2); err != nil {
		t.Fatal(err)
	}
	rwl := rw.New(c, "acl-least-rw")
	for name, l := range map[string]lease.Locker{"fair": fairqueue.New(c, "acl-least-fair"),
		"read": rwl.Read(), "write": rwl.Write(), "semaphore": sem} {
		ls, err := l.Acquire(ctx)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := ls.Release(ctx); err != nil {
			t.Fatalf("%s release: %v", name, err)
		}
	}
	if ws := w.list(); len(ws) != 0 {
		t.Errorf("warnings under the least ACL: %v", ws)
	}
}

// A server that turns into a replica under a Client (a failover behind an
// address that moves) answers READONLY: a pause, waited out with backoff,
// and since the script did not run there is nothing to undo, so no clean-up
// goroutine is left per attempt. Once the server is a primary again, the
// waiting Acquire takes the lock.
func TestReadOnlyAfterFailoverIsAPause(t *testing.T) {
	other := redistest.Start(t)
	srv := redistest.Start(t)
	c := locktest.Open(t, srv)
	ctx := context.Background()
	if err := srv.Do("REPLICAOF", "127.0.0.1", strconv.Itoa(other.Port())).Error(); err != nil {
		t.Fatal(err)
	}
	before := locktest.Goroutines()
	actx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		l, err := rlock.New(c, "readonly-pause").Acquire(actx)
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	// Attempts back off to about a second apart; 2s sees several.
	time.Sleep(2 * time.Second)
	// The waiter itself and its subscription; before the change every
	// attempt left a clean-up goroutine retrying for the lease (30s).
	if n := locktest.Goroutines(); n > before+4 {
		t.Errorf("%d goroutines while READONLY is waited out, %d before", n, before)
	}
	if err := srv.Do("REPLICAOF", "NO", "ONE").Error(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("Acquire across READONLY: %v", err)
	}
}
