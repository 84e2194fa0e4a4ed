package election_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/election"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
)

// An observer reports the current leader at once, then each change: a new
// value, the end of a term (with its token), a new leader in a later term.
func TestObserveOrder(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxTimeout(t, 20*time.Second)
	watcher, ca, cb := open(t, srv), open(t, srv), open(t, srv)
	a := election.New(ca, "order")

	early := election.New(watcher, "order").Observe(ctx) // before any leader: reports nothing yet
	la := campaign(t, a, ctx, "a1")
	if got := next(t, early, 5*time.Second); got != of(la, "a1") {
		t.Fatalf("first report %+v, want %+v", got, of(la, "a1"))
	}
	late := election.New(watcher, "order").Observe(ctx) // with a leader: reports it at once
	if got := next(t, late, 5*time.Second); got != of(la, "a1") {
		t.Fatalf("first report of a late observer %+v, want %+v", got, of(la, "a1"))
	}
	if err := a.Proclaim(ctx, "a2"); err != nil {
		t.Fatal(err)
	}
	for _, obs := range []<-chan election.Leader{early, late} {
		if got := next(t, obs, 5*time.Second); got != of(la, "a2") {
			t.Fatalf("after Proclaim: %+v, want %+v", got, of(la, "a2"))
		}
	}

	ch := campaignAsync(t, election.New(cb, "order"), ctx, "b1")
	eventually(t, 5*time.Second, "campaigner waiting", func() bool { return cb.Stats().Waiters == 1 })
	release(t, la)
	lb := won(t, ch, 5*time.Second)
	for _, obs := range []<-chan election.Leader{early, late} {
		got := next(t, obs, 5*time.Second)
		if got.Owner == "" {
			// The end of a's term, if read before b's began.
			if got != (election.Leader{Token: la.Token()}) {
				t.Fatalf("end of term reported as %+v, want the ended term %d and nothing else", got, la.Token())
			}
			got = next(t, obs, 5*time.Second)
		}
		if got != of(lb, "b1") || lb.Token() <= la.Token() {
			t.Fatalf("next term %+v, want %+v above %d", got, of(lb, "b1"), la.Token())
		}
	}
	resigned := time.Now()
	release(t, lb)
	for _, obs := range []<-chan election.Leader{early, late} {
		if got := next(t, obs, 5*time.Second); got != (election.Leader{Token: lb.Token()}) {
			t.Fatalf("after the last resignation: %+v, want no owner and term %d", got, lb.Token())
		}
	}
	t.Logf("both observers reported the resignation within %v", time.Since(resigned))
	select {
	case l := <-early:
		t.Fatalf("report %+v with nothing changed", l)
	case <-time.After(200 * time.Millisecond):
	}
}

// A reader slower than the changes gets the latest state, not a backlog: of
// 20 values proclaimed while it did not read, it gets the last, after at most
// the report the channel held and one read in flight when it began reading.
func TestObserveSlowReader(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxTimeout(t, 20*time.Second)
	watcher, c := open(t, srv), open(t, srv)
	e := election.New(c, "slow")
	ls := campaign(t, e, ctx, "v0")
	obs := election.New(watcher, "slow").Observe(ctx)
	if cap(obs) != 1 {
		t.Fatalf("channel capacity %d, want 1", cap(obs))
	}
	const n = 20
	for i := 1; i <= n; i++ {
		if err := e.Proclaim(ctx, fmt.Sprintf("v%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for len(got) == 0 || got[len(got)-1] != fmt.Sprintf("v%02d", n) {
		l := next(t, obs, 5*time.Second)
		if l.Token != ls.Token() || (len(got) > 0 && l.Value <= got[len(got)-1]) {
			t.Fatalf("report %+v after %v: out of order", l, got)
		}
		got = append(got, l.Value)
	}
	if len(got) > 3 {
		t.Fatalf("the slow reader got %d reports %v: a backlog", len(got), got)
	}
	t.Logf("the slow reader got %v", got)
	select {
	case l := <-obs:
		t.Fatalf("report %+v after the latest", l)
	case <-time.After(200 * time.Millisecond):
	}
	release(t, ls)
}

// The producer closes the channel when ctx ends, and when the Client closes;
// Close waits for it (goleak would report it otherwise).
func TestObserveClosed(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	obs := election.New(c, "closed").Observe(ctx)
	eventually(t, 5*time.Second, "observer subscribed", func() bool { return c.Stats().Waiters == 1 })
	cancel()
	drained(t, obs)
	eventually(t, 5*time.Second, "observer gone from the hub", func() bool { return c.Stats().Waiters == 0 })

	other := open(t, srv)
	obs = election.New(other, "closed").Observe(context.Background())
	eventually(t, 5*time.Second, "observer subscribed", func() bool { return other.Stats().Waiters == 1 })
	other.Close()
	drained(t, obs)
	if l, ok := <-election.New(other, "closed").Observe(context.Background()); ok {
		t.Fatalf("Observe on a closed Client reported %+v", l)
	}
	gone, stop := context.WithCancel(context.Background())
	stop()
	if _, ok := <-election.New(c, "closed").Observe(gone); ok {
		t.Fatal("Observe with an ended ctx reported")
	}
}

// drained reads ch until it is closed, failing the test if that takes more
// than 5s.
func drained(t *testing.T, ch <-chan election.Leader) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("channel not closed within 5s")
		}
	}
}

// A leader that dies (its connection cut and refused, as a killed process:
// it can neither renew nor resign) loses its term when its lease runs out:
// the next campaigner leads in a later term, the dead leader's lease is lost,
// and the observer goes from the old term to the new, never back.
func TestLeaderKilled(t *testing.T) {
	srv := redistest.Start(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	opt := srv.Option()
	opt.InitAddress = []string{proxy.Addr()}
	dead := openAt(t, opt, leasehold.WithWatchdog(watchdog))
	live, watcher := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	obs := election.New(watcher, "killed").Observe(ctx)

	la := campaign(t, election.New(dead, "killed"), ctx, "a")
	if got := next(t, obs, 5*time.Second); got != of(la, "a") {
		t.Fatalf("observed %+v, want %+v", got, of(la, "a"))
	}
	ch := campaignAsync(t, election.New(live, "killed"), ctx, "b")
	proxy.Refuse(true)
	proxy.Cut()
	killed := time.Now()
	lb := won(t, ch, watchdog+10*time.Second)
	t.Logf("the next leader led %v after the leader was cut off (lease %v)", time.Since(killed), watchdog)
	if lb.Token() <= la.Token() {
		t.Fatalf("term %d after term %d", lb.Token(), la.Token())
	}
	observeTerm(t, obs, la, lb, "b")
	t.Logf("the observer reported the next term %v after the leader was cut off", time.Since(killed))
	select {
	case <-la.Lost():
		wantErr(t, la.Err(), lease.ErrLost)
	case <-time.After(5 * time.Second):
		t.Fatal("the dead leader's lease not lost")
	}
	release(t, lb)
}

// observeTerm reads obs until it reports the term of ls with value: every
// report before is the end of the term of old, or nothing newer.
func observeTerm(t *testing.T, obs <-chan election.Leader, old, ls *lease.Lease, value string) {
	t.Helper()
	for {
		got := next(t, obs, 10*time.Second)
		switch got {
		case of(ls, value):
			return
		case election.Leader{Token: old.Token()}: // the end of the old term
		default:
			t.Fatalf("observed %+v, want the end of term %d or %+v", got, old.Token(), of(ls, value))
		}
	}
}

// Keys deleted under a live leader end its term: deleting the lock or the
// leader key (an operator, a FLUSHALL, an eviction) lets the next campaigner
// lead, the old leader learns at once (the lock key deleted) or at its next
// renewal (the leader key alone), and observers see the new
// term. Deleting the leader key alone frees the lock too: the old leader's
// renewal gives its hold up, so the next need not wait for it to run out.
func TestKeysDeleted(t *testing.T) {
	for _, keys := range [][]string{{"gone", "{gone}:leader"}, {"gone"}, {"{gone}:leader"}} {
		t.Run(fmt.Sprint(keys), func(t *testing.T) {
			srv := redistest.Start(t)
			ctx := ctxTimeout(t, 20*time.Second)
			ca, cb, watcher := open(t, srv), open(t, srv), open(t, srv)
			obs := election.New(watcher, "gone").Observe(ctx)
			la := campaign(t, election.New(ca, "gone"), ctx, "a")
			if got := next(t, obs, 5*time.Second); got != of(la, "a") {
				t.Fatalf("observed %+v, want %+v", got, of(la, "a"))
			}
			ch := campaignAsync(t, election.New(cb, "gone"), ctx, "b")
			eventually(t, 5*time.Second, "campaigner waiting", func() bool { return cb.Stats().Waiters == 1 })
			srv.Do(append([]string{"DEL"}, keys...)...)
			lb := won(t, ch, 10*time.Second)
			if lb.Token() <= la.Token() {
				t.Fatalf("term %d after term %d", lb.Token(), la.Token())
			}
			observeTerm(t, obs, la, lb, "b")
			select {
			case <-la.Lost():
				wantErr(t, la.Err(), lease.ErrLost)
			case <-time.After(5 * time.Second):
				t.Fatal("the old leader's lease not lost")
			}
			if got, err := election.New(ca, "gone").Leader(ctx); err != nil || got != of(lb, "b") {
				t.Fatalf("Leader = %+v, %v; want %+v", got, err, of(lb, "b"))
			}
			release(t, lb)
		})
	}
}
