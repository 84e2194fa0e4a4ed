// Package locktest holds the helpers the lock packages' tests share: a
// Client per test, polling for a condition, acquiring and releasing with
// failures reported, checking errors. Tests alias what they use:
//
//	var eventually = locktest.Eventually
package locktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
)

// Open returns a Client on srv, closed when the test ends.
func Open(tb testing.TB, srv *redistest.Server, opts ...leasehold.Option) *leasehold.Client {
	tb.Helper()
	return OpenAt(tb, srv.Option(), opts...)
}

// OpenAt returns a Client dialled with opt, closed when the test ends.
func OpenAt(tb testing.TB, opt rueidis.ClientOption, opts ...leasehold.Option) *leasehold.Client {
	tb.Helper()
	c, err := leasehold.Open(opt, opts...)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// OpenDenied returns a Client on srv that authenticates as an ACL user
// allowed every command, key and channel except the commands denied (such as
// "publish"), closed when the test ends: a server whose ACL refuses what a
// script calls.
func OpenDenied(tb testing.TB, srv *redistest.Server, denied ...string) *leasehold.Client {
	tb.Helper()
	return OpenAt(tb, Denied(tb, srv, denied...))
}

// Denied creates the ACL user of OpenDenied and returns rueidis options that
// authenticate as it.
func Denied(tb testing.TB, srv *redistest.Server, denied ...string) rueidis.ClientOption {
	tb.Helper()
	user, pass := "denied-"+strings.Join(denied, "-"), "pw"
	rules := []string{"ACL", "SETUSER", user, "reset", "on", ">" + pass, "~*", "&*", "+@all"}
	for _, cmd := range denied {
		rules = append(rules, "-"+cmd)
	}
	if err := srv.Do(rules...).Error(); err != nil {
		tb.Fatalf("ACL SETUSER %s: %v", user, err)
	}
	opt := srv.Option()
	opt.Username, opt.Password = user, pass
	return opt
}

// Refused is how many times srv's ACL has refused the command cmd so far
// (ACL LOG's count of its entries for cmd), to show that a test met the
// refusal it is about.
func Refused(tb testing.TB, srv *redistest.Server, cmd string) int64 {
	tb.Helper()
	entries, err := srv.Do("ACL", "LOG").ToArray()
	if err != nil {
		tb.Fatalf("ACL LOG: %v", err)
	}
	var n int64
	for _, e := range entries {
		m, err := e.AsMap()
		if err != nil {
			tb.Fatalf("ACL LOG entry: %v", err)
		}
		object, count := m["object"], m["count"]
		if s, _ := object.ToString(); s == cmd {
			c, _ := count.AsInt64()
			n += c
		}
	}
	return n
}

// Calls is how many times srv has run the command cmd, lower case (INFO
// commandstats' calls; 0 before its first).
func Calls(tb testing.TB, srv *redistest.Server, cmd string) int64 {
	tb.Helper()
	s, err := srv.Do("INFO", "commandstats").ToString()
	if err != nil {
		tb.Fatalf("INFO commandstats: %v", err)
	}
	_, rest, ok := strings.Cut(s, "cmdstat_"+cmd+":calls=")
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
	if err != nil {
		tb.Fatalf("commandstats of %s: %v", cmd, err)
	}
	return n
}

// Eventually polls cond every few ms until it holds, failing the test with
// what if d passes first.
func Eventually(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Ctx returns a context that ends after d, or when the test ends.
func Ctx(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}

// MustAcquire acquires l, failing the test on error.
func MustAcquire(tb testing.TB, l lease.Locker, ctx context.Context) *lease.Lease {
	tb.Helper()
	ls, err := l.Acquire(ctx)
	if err != nil {
		tb.Fatalf("Acquire: %v", err)
	}
	return ls
}

// Release releases ls, failing the test on error.
func Release(tb testing.TB, ls *lease.Lease) {
	tb.Helper()
	if err := ls.Release(context.Background()); err != nil {
		tb.Fatalf("Release: %v", err)
	}
}

// IsLost reports whether ls's Lost channel is closed.
func IsLost(ls *lease.Lease) bool {
	select {
	case <-ls.Lost():
		return true
	default:
		return false
	}
}

// WantErr fails the test unless err wraps target.
func WantErr(tb testing.TB, err, target error) {
	tb.Helper()
	if !errors.Is(err, target) {
		tb.Fatalf("error %v, want one wrapping %v", err, target)
	}
}

// WantMsg fails the test unless err says sub.
func WantMsg(tb testing.TB, err error, sub string) {
	tb.Helper()
	if err == nil || !strings.Contains(err.Error(), sub) {
		tb.Fatalf("error %v, want one saying %q", err, sub)
	}
}

// Snapshot is every key of srv with its type and serialized value, to show
// byte for byte that an operation changed nothing.
func Snapshot(tb testing.TB, srv *redistest.Server) string {
	tb.Helper()
	keys, err := srv.Do("KEYS", "*").AsStrSlice()
	if err != nil {
		tb.Fatal(err)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		typ, _ := srv.Do("TYPE", k).ToString()
		dump, _ := srv.Do("DUMP", k).ToString()
		fmt.Fprintf(&b, "%s(%s)=%q ", k, typ, dump)
	}
	return b.String()
}

// Result waits up to d for f and returns its lease, failing the test if f
// is not done by then or failed.
func Result(tb testing.TB, f *lease.Future, d time.Duration) *lease.Lease {
	tb.Helper()
	select {
	case <-f.Done():
	case <-time.After(d):
		tb.Fatalf("waiter not done within %v", d)
	}
	ls, err := f.Result()
	if err != nil {
		tb.Fatalf("waiter: %v", err)
	}
	return ls
}

// IsDone reports whether f is done.
func IsDone(f *lease.Future) bool {
	select {
	case <-f.Done():
		return true
	default:
		return false
	}
}

// Subscribe listens on channel with a plain client of srv, as a Redisson
// waiter would, until the test ends, and returns the messages heard. It
// returns once the subscription is confirmed.
func Subscribe(tb testing.TB, srv *redistest.Server, channel string) <-chan string {
	tb.Helper()
	rc := srv.Client()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan string, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = rc.Receive(ctx, rc.B().Subscribe().Channel(channel).Build(), func(m rueidis.PubSubMessage) {
			select {
			case ch <- m.Message:
			default:
			}
		})
	}()
	tb.Cleanup(func() { cancel(); <-done })
	Eventually(tb, 5*time.Second, "subscribed to "+channel, func() bool {
		v, err := srv.Do("PUBSUB", "NUMSUB", channel).ToArray()
		if err != nil || len(v) != 2 {
			return false
		}
		n, _ := v[1].AsInt64()
		return n == 1
	})
	return ch
}

// Handoffs runs workers goroutines that each loop: acquire, hold for hold,
// release, until n acquisitions are made, and returns how long that took.
// A goroutine that released does not contend again until another has
// acquired since its own acquisition, so each acquisition is a handoff to a
// goroutine that was waiting, woken by a release (a releaser that re-won at
// once would measure no wake-up). acquire returns the release. The hold is
// spent by Work, so that it lasts hold and no more.
func Handoffs(tb testing.TB, workers, n int, hold time.Duration, acquire func(context.Context) (func(), error)) time.Duration {
	return HandoffsBy(tb, workers, n, hold, func(ctx context.Context, _ int) (func(), error) { return acquire(ctx) })
}

// HandoffsBy is Handoffs with acquire told which worker (0 to workers-1)
// calls it: workers of several Clients each acquire on their own.
func HandoffsBy(tb testing.TB, workers, n int, hold time.Duration, acquire func(ctx context.Context, worker int) (func(), error)) time.Duration {
	var (
		mu    sync.Mutex
		moved = sync.NewCond(&mu)
		count int // acquisitions so far, under mu
		wg    sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := func() {
		cancel()
		mu.Lock()
		moved.Broadcast()
		mu.Unlock()
	}
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				release, err := acquire(ctx, w)
				if err != nil {
					if ctx.Err() == nil {
						tb.Error(err)
						stop()
					}
					return
				}
				mu.Lock()
				count++
				mine, done := count, count >= n
				moved.Broadcast()
				mu.Unlock()
				Work(hold)
				release()
				if done {
					stop()
					return
				}
				mu.Lock()
				for count == mine && ctx.Err() == nil {
					moved.Wait()
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// Work spends d as a critical section's work would, yielding to other
// goroutines meanwhile. Unlike time.Sleep, whose wake-up below a
// millisecond depends on what else the process is doing (an idle Go
// runtime waits for timers in whole milliseconds), it ends after d, so a
// benchmark's handoff rate is not set by how busy its waiters keep the
// runtime.
func Work(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		runtime.Gosched()
	}
}

// Stream starts a goroutine per locker that, after i*stagger for the i-th,
// takes a lease, holds it for hold and comes straight back for another,
// until ctx ends: a stream of takers that keeps the lock busy. The returned
// wait waits for them once ctx has ended and fails the test with their
// errors, if any.
func Stream(tb testing.TB, ctx context.Context, lockers []lease.Locker, hold, stagger time.Duration) (wait func()) {
	var wg sync.WaitGroup
	errs := make(chan error, len(lockers))
	for i, l := range lockers {
		wg.Go(func() {
			select {
			case <-time.After(time.Duration(i) * stagger):
			case <-ctx.Done():
				return
			}
			for {
				ls, err := l.Acquire(ctx)
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						errs <- err
					}
					return
				}
				select {
				case <-time.After(hold):
				case <-ctx.Done():
				}
				if err := ls.Release(context.Background()); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	return func() {
		tb.Helper()
		wg.Wait()
		close(errs)
		for err := range errs {
			tb.Error(err)
		}
	}
}

// JavaLock runs Redisson's lock script on rc as the Java owner: true when the
// Java side holds the lock name.
func JavaLock(tb testing.TB, rc rueidis.Client, name string) bool {
	tb.Helper()
	held, err := redistest.RedissonLock(context.Background(), rc, name)
	if err != nil {
		tb.Fatalf("Redisson lock script: %v", err)
	}
	return held
}

// JavaUnlock runs Redisson's unlock script on rc for the Java owner,
// publishing with PUBLISH.
func JavaUnlock(tb testing.TB, rc rueidis.Client, name string) {
	tb.Helper()
	if err := redistest.RedissonUnlock(context.Background(), rc, name, "publish"); err != nil {
		tb.Fatalf("Redisson unlock script: %v", err)
	}
}

// Goroutines counts the process' goroutines less the writer and reader of
// rueidis' pipelined mode, which rueidis starts for good on a connection
// once it has concurrent or cancellable work (a connection in its direct
// mode has none): their coming is no goroutine left behind.
func Goroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		if !bytes.Contains(g, []byte("rueidis.(*pipe)._background")) {
			n++
		}
	}
	return n
}
