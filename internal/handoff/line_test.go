package handoff

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/leasehold/leasehold/internal/hub"
	"github.com/leasehold/leasehold/internal/lua"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The line's rules, without Redis: a fake waiter stands for the hub's, a
// fake script for lock_handoff.

type fakeWaiter struct {
	listening bool
	woken     atomic.Int64
	messages  atomic.Uint64
}

func (w *fakeWaiter) Listening() bool  { return w.listening }
func (w *fakeWaiter) Wake()            { w.woken.Add(1) }
func (w *fakeWaiter) Messages() uint64 { return w.messages.Load() }

// fakeScript answers ReleaseTo with reply, and records what it was asked.
type fakeScript struct {
	reply     lua.Passed
	err       error
	successor string
	ask       bool
	calls     int
}

func (f *fakeScript) ReleaseTo(_ context.Context, _ rueidis.Client, _, successor, _ string, ask bool, _ time.Duration) (lua.Passed, error) {
	f.successor, f.ask = successor, ask
	f.calls++
	return f.reply, f.err
}

const ch, key = "redisson_lock__channel:{x}", "x"

func newLines() *Lines { return New(hub.NewHub(nil)) }

func release(t *testing.T, ls *Lines, s *fakeScript) Result {
	t.Helper()
	r, err := ls.Release(context.Background(), nil, s, ch, "holder")
	if err != nil && s.err == nil {
		t.Fatal(err)
	}
	return r
}

// A release picks the longest-waiting candidate that is idle and listening:
// not one trying the lock itself, nor one whose subscription is not
// confirmed (the channel's count of listeners would not include this
// Client). A picked candidate may not try; with nobody standing, a release
// does nothing.
func TestPick(t *testing.T) {
	ls := newLines()
	s := &fakeScript{reply: lua.Passed{Outcome: lua.HandedOff, Token: 7}}
	if r := release(t, ls, s); r.Ran || s.calls != 0 {
		t.Fatalf("nobody standing: %+v, %d scripts", r, s.calls)
	}
	deaf, a, b := &fakeWaiter{}, &fakeWaiter{listening: true}, &fakeWaiter{listening: true}
	cd := ls.Stand(deaf, ch, key, "o:deaf", "1000")
	ca := ls.Stand(a, ch, key, "o:a", "1000")
	cb := ls.Stand(b, ch, key, "o:b", "1000")
	defer cd.Leave()
	defer cb.Leave()
	if ok, _ := ca.MayTry(time.Now()); !ok {
		t.Fatal("an idle candidate may not try")
	}
	r := release(t, ls, s)
	if !r.Ran || s.successor != "o:b" || !s.ask {
		t.Fatalf("release: %+v to %q (ask %v), want the lock passed to o:b, asking (a turn begins)", r, s.successor, s.ask)
	}
	select {
	case p := <-cb.Passed():
		if p.Token != 7 {
			t.Fatalf("passed token %d, want 7", p.Token)
		}
	default:
		t.Fatal("o:b was not passed the lock")
	}
	if ok, _ := cb.MayTry(time.Now()); ok {
		t.Fatal("a candidate passed the lock may try it")
	}
	ca.Tried(false)
	ca.Leave()
}

// A turn: a candidate that won by an attempt begins it, and every other
// candidate standing then is passed the lock without asking; the next
// release asks. Won does the same for an attempt of a goroutine that stood
// in no line.
func TestTurn(t *testing.T) {
	ls := newLines()
	var cs []*Candidate
	for range 4 {
		c := ls.Stand(&fakeWaiter{listening: true}, ch, key, "o", "1000")
		cs = append(cs, c)
		defer c.Leave()
	}
	ls.Won(ch)
	s := &fakeScript{reply: lua.Passed{Outcome: lua.HandedOff, Token: 1}}
	for i := range 4 {
		release(t, ls, s)
		if s.ask {
			t.Fatalf("pass %d of a turn of 4 asked", i+1)
		}
		<-cs[i].Passed()
		cs[i].Leave()
		cs[i] = ls.Stand(&fakeWaiter{listening: true}, ch, key, "o", "1000") // back in line
		defer cs[i].Leave()
	}
	release(t, ls, s)
	if !s.ask {
		t.Fatal("the release after a turn of 4 passes did not ask")
	}
}

// Asked, with someone else wanting the lock, a release publishes and the
// Client yields: no candidate may try until the window ends, unless the
// channel stirs twice (its own message, then another's release); the
// picked candidate is woken to try when it does. A yield's window doubles
// when nobody took the lock in it, and is back to its floor once someone
// did.
func TestYield(t *testing.T) {
	ls := newLines()
	w := &fakeWaiter{listening: true}
	c := ls.Stand(w, ch, key, "o", "1000")
	defer c.Leave()
	s := &fakeScript{reply: lua.Passed{Outcome: lua.Yielded, Listeners: 1}}
	if r := release(t, ls, s); r.Outcome != lua.Freed {
		t.Fatalf("outcome %d, want Freed", r.Outcome)
	}
	if w.woken.Load() != 1 {
		t.Fatal("the picked candidate was not woken")
	}
	now := time.Now()
	ok, until := c.MayTry(now)
	if ok || until.Sub(now) < listenFloor/2 || until.Sub(now) > listenCap {
		t.Fatalf("MayTry in the yield = %v until %v from now, want false for about %v", ok, until.Sub(now), listenFloor)
	}
	w.messages.Add(1) // the release's own message
	if ok, _ := c.MayTry(now); ok {
		t.Fatal("its own message ended the yield")
	}
	w.messages.Add(1) // another's release
	if ok, _ := c.MayTry(now); !ok {
		t.Fatal("another's release did not end the yield")
	}
	c.Tried(false) // someone took it: the window stays at its floor
	if c.line.window != listenFloor {
		t.Fatalf("window %v after a yield taken, want %v", c.line.window, listenFloor)
	}
	// A yield nobody took: the window doubles.
	release(t, ls, s)
	_, until = c.MayTry(time.Now())
	if ok, _ := c.MayTry(until); !ok {
		t.Fatal("the yield did not end at its window")
	}
	c.Tried(true)
	if c.line.window != 2*listenFloor {
		t.Fatalf("window %v after a yield nobody took, want %v", c.line.window, 2*listenFloor)
	}
	// Two other listeners: the yield lasts until both had their turn, each
	// release heard restarting the window.
	c.Tried(false)
	s.reply = lua.Passed{Outcome: lua.Yielded, Listeners: 2}
	release(t, ls, s)
	_, first := c.MayTry(time.Now())
	time.Sleep(time.Millisecond)
	w.messages.Add(2) // its own message, then one other's release
	heard := time.Now()
	ok, until = c.MayTry(heard)
	if ok || until.Before(heard.Add(listenFloor)) || !until.After(first) {
		t.Fatalf("one of two others heard: MayTry %v until %v from then (%v at first); want the window restarted",
			ok, until.Sub(heard), first.Sub(heard))
	}
	w.messages.Add(1) // the second other's
	if ok, _ := c.MayTry(heard); !ok {
		t.Fatal("both others' releases heard, and the yield goes on")
	}
	c.Tried(false)
	// A yield whose attempt, after its window, finds the lock taken (an
	// other's turn under way) goes on until their release is heard.
	s.reply = lua.Passed{Outcome: lua.Yielded, Listeners: 1}
	release(t, ls, s)
	_, until = c.MayTry(time.Now())
	if ok, _ := c.MayTry(until); !ok {
		t.Fatal("no attempt after the window")
	}
	c.Tried(false)
	if ok, next := c.MayTry(until); ok || next.Sub(until) < yieldRetry/2 {
		t.Fatalf("after an attempt that found the lock taken: MayTry %v until %v later", ok, next.Sub(until))
	}
	w.messages.Add(2) // its own message, then the other's release
	if ok, _ := c.MayTry(until); !ok {
		t.Fatal("the other's release heard, and the yield goes on")
	}
	c.Tried(true)
	// A mark: the yield lasts until it runs out.
	s.reply = lua.Passed{Outcome: lua.Yielded, Mark: time.Second}
	release(t, ls, s)
	if ok, until := c.MayTry(time.Now()); ok || time.Until(until) < 900*time.Millisecond {
		t.Fatalf("MayTry under a mark of 1s = %v until %v from now", ok, time.Until(until))
	}
}

// A candidate that left while picked makes the release give the lock
// back: passed to its owner, or possibly, when the reply was lost. One
// still standing after a release that failed is woken to try.
func TestLeftWhilePicked(t *testing.T) {
	ls := newLines()
	w := &fakeWaiter{listening: true}
	c := ls.Stand(w, ch, key, "o:left", "1000")
	s := &fakeScript{reply: lua.Passed{Outcome: lua.HandedOff, Token: 1}}
	// The candidate leaves while the script runs.
	s2 := &leaving{fakeScript: s, c: c}
	r, err := ls.Release(context.Background(), nil, s2, ch, "holder")
	if err != nil || r.GiveBack != "o:left" {
		t.Fatalf("Release: %+v, %v; want o:left given back", r, err)
	}
	c = ls.Stand(w, ch, key, "o:stays", "1000")
	defer c.Leave()
	s.err = errors.New("connection reset")
	s.reply = lua.Passed{}
	before := w.woken.Load()
	if _, err := ls.Release(context.Background(), nil, s, ch, "holder"); err == nil {
		t.Fatal("no error")
	}
	if w.woken.Load() != before+1 {
		t.Fatal("the candidate was not woken after the release failed")
	}
	if ok, _ := c.MayTry(time.Now()); !ok {
		t.Fatal("the candidate may not try after the release failed")
	}
}

// leaving is a script during whose run its candidate leaves.
type leaving struct {
	*fakeScript
	c *Candidate
}

func (l *leaving) ReleaseTo(ctx context.Context, rc rueidis.Client, owner, successor, lease string, ask bool, ahead time.Duration) (lua.Passed, error) {
	l.c.Leave()
	return l.fakeScript.ReleaseTo(ctx, rc, owner, successor, lease, ask, ahead)
}

// A mark is due a quarter of its delay early (2ms to 500ms) and runs out
// half its delay later (10ms to 500ms), never after the lock's lease.
func TestWant(t *testing.T) {
	for _, tt := range []struct{ delay, ttl, wantDelay, wantMargin time.Duration }{
		{10 * time.Millisecond, time.Minute, 7500 * time.Microsecond, 12500 * time.Microsecond},
		{4 * time.Millisecond, time.Minute, 2 * time.Millisecond, 12 * time.Millisecond},
		{time.Second, time.Minute, 750 * time.Millisecond, 750 * time.Millisecond},
		{2 * time.Second, time.Second, 0, time.Second},
	} {
		if d, m := Want(tt.delay, tt.ttl); d != tt.wantDelay || m != tt.wantMargin {
			t.Errorf("Want(%v, %v) = %v, %v; want %v, %v", tt.delay, tt.ttl, d, m, tt.wantDelay, tt.wantMargin)
		}
	}
}
