package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/leasehold/leasehold/internal/core"
	"github.com/leasehold/leasehold/internal/hub"
	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/lease"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The wait loop, without Redis: a fake protocol answers each attempt as the
// test scripts it, a fake clock decides when the loop's timer fires, and a
// fake hub delivers wake-ups. Everything the loop does between attempts is
// then visible and deterministic.

// fakeClock is a clock whose time moves only when the test advances it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	armed  chan time.Duration // each duration a timer is set to, as it is set
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Unix(1_000_000, 0), armed: make(chan time.Duration, 64)}
}

func (c *fakeClock) NewTimer(d time.Duration) timer {
	t := &fakeTimer{c: c, ch: make(chan time.Time, 1)}
	c.mu.Lock()
	c.timers = append(c.timers, t)
	c.mu.Unlock()
	t.Reset(d)
	return t
}

// Advance moves the time by d and fires the timers that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	now := c.now
	var due []*fakeTimer
	for _, t := range c.timers {
		if t.active && !t.at.After(now) {
			t.active = false
			due = append(due, t)
		}
	}
	c.mu.Unlock()
	for _, t := range due {
		t.ch <- now
	}
}

type fakeTimer struct {
	c      *fakeClock
	ch     chan time.Time
	at     time.Time
	active bool
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Reset(d time.Duration) {
	t.c.mu.Lock()
	t.at, t.active = t.c.now.Add(d), true
	t.c.mu.Unlock()
	t.c.armed <- d
}

func (t *fakeTimer) Stop() {
	t.c.mu.Lock()
	t.active = false
	t.c.mu.Unlock()
}

// fakeHub hands out one waiter per Watch; the test wakes and readies them.
type fakeHub struct {
	mu      sync.Mutex
	waiters []*fakeWaiter
	watched chan *fakeWaiter
	// quiet: every waiter reports it missed nothing since the mark taken
	// before the first attempt (the channel was subscribed and silent).
	quiet bool
}

func newFakeHub() *fakeHub { return &fakeHub{watched: make(chan *fakeWaiter, 8)} }

func (h *fakeHub) Watch(channel, key string, opts ...hub.WatchOption) (waiter, error) {
	h.mu.Lock()
	w := &fakeWaiter{channel: channel, opts: len(opts), ready: make(chan struct{}), c: make(chan struct{}, 1), left: make(chan bool, 1),
		quiet: h.quiet}
	h.waiters = append(h.waiters, w)
	h.mu.Unlock()
	h.watched <- w
	return w, nil
}

type fakeWaiter struct {
	channel string
	opts    int // WatchOptions it was registered with
	ready   chan struct{}
	c       chan struct{}
	left    chan bool // receives Leave's passOn
	quiet   bool
}

func (h *fakeHub) Mark(string) hub.Mark { return hub.Mark{} }

func (w *fakeWaiter) Ready() <-chan struct{}      { return w.ready }
func (w *fakeWaiter) C() <-chan struct{}          { return w.c }
func (w *fakeWaiter) Track(context.Context) error { return nil }
func (w *fakeWaiter) Leave(passOn bool)           { w.left <- passOn }
func (w *fakeWaiter) Missed(hub.Mark) bool        { return !w.quiet }

// The fake protocol cannot be passed on: its waiters are never claimed.
func (w *fakeWaiter) Listening() bool  { return true }
func (w *fakeWaiter) Wake()            {}
func (w *fakeWaiter) Messages() uint64 { return 0 }

// answer is one scripted reply to an attempt.
type answer struct {
	g   lua.Grant
	err error
}

// fakeProtocol answers attempts from a script and records what it is asked.
type fakeProtocol struct {
	lua.Traits
	answers  chan answer // the replies, in order; an attempt blocks for its reply
	tries    chan string // the owner of each attempt, as it is made
	mu       sync.Mutex
	released []string // owners released with all set
	left     []string // owners that abandoned their wait
}

// fakeKind is the fake protocol's kind.
var fakeKind = &lua.Kind{Name: "fake", Reentrant: true}

func newFakeProtocol() *fakeProtocol {
	p := &fakeProtocol{answers: make(chan answer, 16), tries: make(chan string, 16)}
	p.Traits = lua.Traits{Kind: fakeKind, Leaves: p}
	return p
}

func (p *fakeProtocol) Try(ctx context.Context, _ rueidis.Client, owner string, wait bool) (lua.Grant, error) {
	p.tries <- owner
	select {
	case a := <-p.answers:
		return a.g, a.err
	case <-ctx.Done():
		return lua.Grant{}, ctx.Err()
	}
}

func (p *fakeProtocol) Release(_ context.Context, _ rueidis.Client, owner, _ string, all bool, _ time.Duration) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if all {
		p.released = append(p.released, owner)
	}
	return lua.Freed, nil
}

func (p *fakeProtocol) Renewal(string) *lua.Call { return nil }

func (p *fakeProtocol) Wakeup(owner string) (channel, key string) { return "ch:" + owner, "" }

func (p *fakeProtocol) Presence(owner string) lua.Presence {
	return lua.Presence{Key: "job", Field: owner}
}

func (p *fakeProtocol) Abandon(_ context.Context, _ rueidis.Client, owner string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.left = append(p.left, owner)
	return nil
}

func (p *fakeProtocol) recorded() (released, left []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.released...), append([]string(nil), p.left...)
}

// rig is an Engine on fakes, with a fixed lease of an hour so the keeper
// never renews.
type rig struct {
	e     *Engine
	clock *fakeClock
	hub   *fakeHub
	proto *fakeProtocol
	c     *core.Client
}

func newRig(t *testing.T) *rig {
	t.Helper()
	c := core.NewClient(nil, false, core.Options{Watchdog: time.Hour})
	t.Cleanup(c.Close)
	r := &rig{clock: newFakeClock(), hub: newFakeHub(), proto: newFakeProtocol(), c: c}
	r.e = New(c, "job", core.LockConfig{LeaseTime: time.Hour, Options: core.Options{Watchdog: time.Hour}}, r.proto)
	r.e.clock, r.e.watch = r.clock, r.hub
	return r
}

// acquire runs Acquire in the background.
func (r *rig) acquire(ctx context.Context) <-chan result {
	done := make(chan result, 1)
	go func() {
		l, err := r.e.Acquire(ctx)
		done <- result{l, err}
	}()
	return done
}

type result struct {
	l   *lease.Lease
	err error
}

// within bounds every wait for the engine's goroutine: the loop reacts at
// once in real time, so a second is generous even under -race.
const within = 5 * time.Second

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(within):
		t.Fatalf("no %s within %v", what, within)
		panic("unreachable")
	}
}

func quiet[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("unexpected %s: %v", what, v)
	case <-time.After(50 * time.Millisecond):
	}
}

func held(t *testing.T, done <-chan result) *lease.Lease {
	t.Helper()
	res := recv(t, done, "Acquire's return")
	if res.err != nil {
		t.Fatalf("Acquire: %v", res.err)
	}
	t.Cleanup(func() { _ = res.l.Release(context.Background()) })
	return res.l
}

// A failed attempt that reports the holder's remaining lease sleeps exactly
// that (plus 1ms for the reply's travel), and tries again when it is over,
// not before.
func TestWaitSleepsTheHoldersLease(t *testing.T) {
	r := newRig(t)
	r.proto.answers <- answer{g: lua.Grant{Wait: 5 * time.Second}}
	done := r.acquire(context.Background())
	owner := recv(t, r.proto.tries, "first attempt")
	recv(t, r.hub.watched, "watch")
	if d := recv(t, r.clock.armed, "timer"); d != 5*time.Second+time.Millisecond {
		t.Fatalf("timer set to %v, want the holder's lease 5s + 1ms", d)
	}
	r.clock.Advance(5 * time.Second)
	quiet(t, r.proto.tries, "attempt before the lease ran out")
	r.proto.answers <- answer{g: lua.Grant{Acquired: true, Token: 7}}
	r.clock.Advance(time.Millisecond)
	if again := recv(t, r.proto.tries, "attempt after the lease"); again != owner {
		t.Fatalf("second attempt as %q, want the same owner %q", again, owner)
	}
	if l := held(t, done); l.Token() != 7 {
		t.Fatalf("token %d, want 7", l.Token())
	}
}

// A wake-up (unlock message or invalidation) brings the next attempt at once,
// without waiting for the timer; so does the subscription becoming ready,
// since a release may have slipped in before it.
func TestWakeUpAndReadyTryAtOnce(t *testing.T) {
	r := newRig(t)
	r.proto.answers <- answer{g: lua.Grant{Wait: time.Hour}}
	done := r.acquire(context.Background())
	recv(t, r.proto.tries, "first attempt")
	w := recv(t, r.hub.watched, "watch")
	recv(t, r.clock.armed, "timer")

	r.proto.answers <- answer{g: lua.Grant{Wait: time.Hour}}
	close(w.ready)
	recv(t, r.proto.tries, "attempt on ready")
	recv(t, r.clock.armed, "timer re-armed")

	r.proto.answers <- answer{g: lua.Grant{Acquired: true, Token: 1}}
	w.c <- struct{}{}
	recv(t, r.proto.tries, "attempt on wake-up")
	held(t, done)
	if passOn := recv(t, w.left, "Leave"); passOn {
		t.Fatal("a waiter that got the lock passed its wake-up on")
	}
}

// A waiter whose channel was subscribed and silent since before its first
// attempt makes no second attempt when Ready: only a wake-up (or the timer)
// brings the next one.
func TestQuietChannelNoSecondAttempt(t *testing.T) {
	r := newRig(t)
	r.hub.quiet = true
	r.proto.answers <- answer{g: lua.Grant{Wait: time.Hour}}
	done := r.acquire(context.Background())
	recv(t, r.proto.tries, "first attempt")
	w := recv(t, r.hub.watched, "watch")
	recv(t, r.clock.armed, "timer")

	close(w.ready)
	select {
	case owner := <-r.proto.tries:
		t.Fatalf("attempt as %q on Ready after a quiet mark", owner)
	case <-time.After(50 * time.Millisecond): // an attempt would come at once
	}
	r.proto.answers <- answer{g: lua.Grant{Acquired: true, Token: 1}}
	w.c <- struct{}{}
	recv(t, r.proto.tries, "attempt on wake-up")
	held(t, done)
}

// A holder whose key has no expiry reports no wait: the waiter sleeps the
// lease time at most, woken sooner by a message.
func TestNoExpiryWaitsTheLeaseTime(t *testing.T) {
	r := newRig(t)
	r.proto.answers <- answer{g: lua.Grant{}}
	done := r.acquire(context.Background())
	recv(t, r.proto.tries, "first attempt")
	if d := recv(t, r.clock.armed, "timer"); d != time.Hour {
		t.Fatalf("timer set to %v, want the lease time 1h", d)
	}
	r.proto.answers <- answer{g: lua.Grant{Acquired: true}}
	r.clock.Advance(time.Hour)
	held(t, done)
}

// When ctx ends the wait returns ctx's error as a *lease.Error naming the
// lock, leaves the hub, and abandons what the waiter left behind (its place
// in a queue), under the owner it waited as.
func TestCtxEndsWait(t *testing.T) {
	r := newRig(t)
	r.proto.answers <- answer{g: lua.Grant{Wait: time.Hour}}
	ctx, cancel := context.WithCancel(context.Background())
	done := r.acquire(ctx)
	owner := recv(t, r.proto.tries, "first attempt")
	w := recv(t, r.hub.watched, "watch")
	recv(t, r.clock.armed, "timer")
	cancel()
	res := recv(t, done, "Acquire's return")
	var le *lease.Error
	if !errors.Is(res.err, context.Canceled) || !errors.As(res.err, &le) || le.Op != "acquire" || le.Name != "job" {
		t.Fatalf("err = %v, want an acquire *lease.Error on job wrapping context.Canceled", res.err)
	}
	if passOn := recv(t, w.left, "Leave"); passOn {
		t.Fatal("a waiter that was never woken passed a wake-up on")
	}
	deadline := time.Now().Add(within)
	for {
		if _, left := r.proto.recorded(); len(left) == 1 && left[0] == owner {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiter %q never abandoned its wait", owner)
		}
		time.Sleep(time.Millisecond)
	}
}

// An attempt whose outcome is unknown (a transport error) is undone in the
// background, and the wait goes on, after a short backoff, under a new
// owner, registered anew for its own wake-ups.
func TestTransientErrorGoesOnUnderNewOwner(t *testing.T) {
	r := newRig(t)
	r.proto.answers <- answer{g: lua.Grant{Wait: time.Hour}}
	done := r.acquire(context.Background())
	first := recv(t, r.proto.tries, "first attempt")
	w1 := recv(t, r.hub.watched, "watch")
	recv(t, r.clock.armed, "timer")

	r.proto.answers <- answer{err: errors.New("connection reset")}
	w1.c <- struct{}{}
	recv(t, r.proto.tries, "attempt that fails")
	if passOn := recv(t, w1.left, "Leave of the old owner's waiter"); passOn {
		t.Fatal("old waiter passed a wake-up on")
	}
	w2 := recv(t, r.hub.watched, "watch under the new owner")
	if w2.channel == w1.channel {
		t.Fatalf("new owner watches the old channel %q", w1.channel)
	}
	d := recv(t, r.clock.armed, "backoff timer")
	if d <= 0 || d > 20*time.Millisecond {
		t.Fatalf("backoff %v after the first error, want about 10ms", d)
	}
	r.proto.answers <- answer{g: lua.Grant{Acquired: true}}
	r.clock.Advance(d)
	second := recv(t, r.proto.tries, "attempt after the backoff")
	if second == first {
		t.Fatalf("went on under the owner %q that is being undone", first)
	}
	if l := held(t, done); l.Owner() != second {
		t.Fatalf("lease owner %q, want %q", l.Owner(), second)
	}
	deadline := time.Now().Add(within)
	for {
		if rel, _ := r.proto.recorded(); len(rel) > 0 && rel[0] == first {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the unknown attempt of %q was never undone", first)
		}
		time.Sleep(time.Millisecond)
	}
}

// A failure that no waiting can cure ends the wait at once, with the lock
// named.
func TestPermanentErrorEndsWait(t *testing.T) {
	r := newRig(t)
	r.proto.answers <- answer{g: lua.Grant{Wait: time.Hour}}
	done := r.acquire(context.Background())
	recv(t, r.proto.tries, "first attempt")
	w := recv(t, r.hub.watched, "watch")
	recv(t, r.clock.armed, "timer")
	r.proto.answers <- answer{err: lease.ErrInvalid}
	w.c <- struct{}{}
	res := recv(t, done, "Acquire's return")
	var le *lease.Error
	if !errors.Is(res.err, lease.ErrInvalid) || !errors.As(res.err, &le) || le.Name != "job" {
		t.Fatalf("err = %v, want a *lease.Error on job wrapping ErrInvalid", res.err)
	}
}

// TryAcquire makes one attempt, never waits, and says who failed it.
func TestTryAcquireNeverWaits(t *testing.T) {
	r := newRig(t)
	r.proto.answers <- answer{g: lua.Grant{Wait: time.Hour}}
	_, err := r.e.TryAcquire(context.Background())
	var le *lease.Error
	if !errors.Is(err, lease.ErrNotAcquired) || !errors.As(err, &le) || le.Op != "try-acquire" {
		t.Fatalf("err = %v, want a try-acquire *lease.Error wrapping ErrNotAcquired", err)
	}
	quiet(t, r.hub.watched, "watch by TryAcquire")
}

// Reentrancy: an Acquire under a lease's context of the same lock takes the
// lock again as the same owner, at once, and raises the hold count.
func TestReentryUnderLeaseContext(t *testing.T) {
	r := newRig(t)
	r.proto.answers <- answer{g: lua.Grant{Acquired: true, Token: 1}}
	outer := held(t, r.acquire(context.Background()))
	owner := recv(t, r.proto.tries, "first attempt")
	r.proto.answers <- answer{g: lua.Grant{Acquired: true, Token: 2}}
	inner := held(t, r.acquire(outer.Context()))
	if again := recv(t, r.proto.tries, "reentrant attempt"); again != owner {
		t.Fatalf("reentrant attempt as %q, want %q", again, owner)
	}
	// The reply's token aside: a re-entry's lease fences with its hold's.
	if inner.HoldCount() != 2 || inner.Token() != 1 {
		t.Fatalf("hold count %d, token %d; want 2, the outer lease's 1", inner.HoldCount(), inner.Token())
	}
}

// permitProtocol is the fake protocol of a kind whose holds are never
// re-entered and whose waiters wait for several permits (a semaphore's).
type permitProtocol struct {
	*fakeProtocol
	traits lua.Traits
}

// permitKind is permitProtocol's kind.
var permitKind = &lua.Kind{Name: "fake-permits"}

func newPermitProtocol(p *fakeProtocol) permitProtocol {
	return permitProtocol{p, lua.Traits{Kind: permitKind, Weight: 3, Leaves: p}}
}

func (p permitProtocol) Is() *lua.Traits { return &p.traits }

// A protocol that is not Reentrant opts out of reentrancy: an Acquire under a lease's
// context of the same lock is a fresh acquisition, under a new owner, that
// waits like any other and returns a lease on a hold of its own (a second
// permit of a semaphore, not a re-entry of the first); neither lease's hold
// count moves, and each is released on its own. Its waiters, of a positive
// Weight, are registered with the hub as Counted.
func TestNonReentrantTakesAnotherHold(t *testing.T) {
	r := newRig(t)
	r.e = New(r.c, "job", core.LockConfig{LeaseTime: time.Hour, Options: core.Options{Watchdog: time.Hour}}, newPermitProtocol(r.proto))
	r.e.clock, r.e.watch = r.clock, r.hub
	r.proto.answers <- answer{g: lua.Grant{Acquired: true}}
	outer := held(t, r.acquire(context.Background()))
	first := recv(t, r.proto.tries, "first attempt")

	r.proto.answers <- answer{g: lua.Grant{Wait: time.Hour}}
	done := r.acquire(outer.Context())
	second := recv(t, r.proto.tries, "attempt under the lease's context")
	if second == first {
		t.Fatalf("attempt under the lease's context as its owner %q: a re-entry", first)
	}
	w := recv(t, r.hub.watched, "watch: it waits like any acquisition")
	if w.opts != 1 {
		t.Fatalf("waiter registered with %d watch options, want 1 (Counted)", w.opts)
	}
	recv(t, r.clock.armed, "timer")
	r.proto.answers <- answer{g: lua.Grant{Acquired: true}}
	w.c <- struct{}{}
	if again := recv(t, r.proto.tries, "attempt on wake-up"); again != second {
		t.Fatalf("woken attempt as %q, want %q", again, second)
	}
	inner := held(t, done)
	if inner.Owner() != second || outer.HoldCount() != 1 || inner.HoldCount() != 1 {
		t.Fatalf("inner owner %q, hold counts %d and %d; want owner %q and 1, 1", inner.Owner(), outer.HoldCount(), inner.HoldCount(), second)
	}
	if err := inner.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if outer.Err() != nil || outer.Context().Err() != nil {
		t.Fatalf("releasing the second hold ended the first: %v", outer.Context().Err())
	}
}
