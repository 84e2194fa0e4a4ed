package election_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/election"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
)

// Three candidates: one leads, the others wait; each resignation hands the
// leadership to one waiting candidate, never two at once, with a term above
// the last.
func TestCampaignResignNext(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxTimeout(t, 30*time.Second)
	var es []*election.Election
	for range 3 {
		es = append(es, election.New(open(t, srv), "sched"))
	}
	first := campaign(t, es[0], ctx, "a")
	waiting := map[string]<-chan outcome{"b": campaignAsync(t, es[1], ctx, "b"), "c": campaignAsync(t, es[2], ctx, "c")}

	leader, term := first, first.Token()
	for len(waiting) > 0 {
		for v, ch := range waiting {
			select {
			case o := <-ch:
				t.Fatalf("%s won (%v) while another led", v, o.err)
			default:
			}
		}
		release(t, leader) // resign
		var value string
		select {
		case o := <-waiting["b"]:
			value, leader = "b", o.ls
			if o.err != nil {
				t.Fatal(o.err)
			}
		case o := <-waiting["c"]:
			value, leader = "c", o.ls
			if o.err != nil {
				t.Fatal(o.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no candidate took over within 10s of a resignation")
		}
		delete(waiting, value)
		if leader.Token() <= term {
			t.Fatalf("term %d after term %d: not rising", leader.Token(), term)
		}
		term = leader.Token()
		got, err := es[0].Leader(ctx)
		if err != nil || got != of(leader, value) {
			t.Fatalf("Leader = %+v, %v; want %+v", got, err, of(leader, value))
		}
	}
	release(t, leader)
	_, err := es[0].Leader(ctx)
	wantErr(t, err, election.ErrNoLeader)
}

// A resignation wakes a waiting campaigner by the lock's unlock message: the
// leader's lease is 30s, the next must lead well before.
func TestResignWakesCampaigner(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxTimeout(t, 20*time.Second)
	slow := openSlow(t, srv) // default watchdog, 30s
	other := openSlow(t, srv)
	leader := campaign(t, election.New(slow, "wake"), ctx, "a")
	ch := campaignAsync(t, election.New(other, "wake"), ctx, "b")
	eventually(t, 5*time.Second, "campaigner waiting", func() bool { return other.Stats().Waiters == 1 })
	resigned := time.Now()
	release(t, leader)
	ls := won(t, ch, 10*time.Second)
	if el := time.Since(resigned); el > 5*time.Second {
		t.Fatalf("the next campaigner led %v after the resignation (lease 30s)", el)
	}
	release(t, ls)
}

// An observer on the same Client as a campaigner does not take the
// campaigner's wake-up: a release's unlock message goes to one waiter of a
// Client, and observers listen on the election's channel, not the lock's.
// Every observer of the Client hears each change.
func TestObserversDoNotStealWakeups(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxTimeout(t, 20*time.Second)
	holder := openSlow(t, srv) // default watchdog, 30s: no timer wakes the campaigner in time
	shared := openSlow(t, srv)
	e := election.New(shared, "steal")
	obs1, obs2 := e.Observe(ctx), e.Observe(ctx)
	leader := campaign(t, election.New(holder, "steal"), ctx, "a")
	for _, obs := range []<-chan election.Leader{obs1, obs2} {
		if got := next(t, obs, 5*time.Second); got != of(leader, "a") {
			t.Fatalf("observed %+v, want %+v", got, of(leader, "a"))
		}
	}
	ch := campaignAsync(t, e, ctx, "b")
	eventually(t, 5*time.Second, "campaigner waiting", func() bool { return shared.Stats().Waiters == 3 })
	release(t, leader)
	ls := won(t, ch, 5*time.Second)
	for _, obs := range []<-chan election.Leader{obs1, obs2} {
		for {
			got := next(t, obs, 5*time.Second)
			if got.Owner == "" {
				continue // the end of the first term, if seen before the next began
			}
			if got != of(ls, "b") {
				t.Fatalf("observed %+v, want %+v", got, of(ls, "b"))
			}
			break
		}
	}
	release(t, ls)
}

func TestProclaim(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxTimeout(t, 20*time.Second)
	c, other := open(t, srv), open(t, srv)
	e := election.New(c, "proclaim")

	err := e.Proclaim(ctx, "early")
	wantErr(t, err, lease.ErrNotHeld)
	ls := campaign(t, e, ctx, "v1")
	if err := e.Proclaim(ctx, "v2"); err != nil {
		t.Fatalf("Proclaim while leading: %v", err)
	}
	if got, err := election.New(other, "proclaim").Leader(ctx); err != nil || got != of(ls, "v2") {
		t.Fatalf("Leader after Proclaim = %+v, %v; want %+v (same term, new value)", got, err, of(ls, "v2"))
	}

	// Elections that did not win, on the same Client or another, cannot.
	for what, o := range map[string]*election.Election{"same Client": election.New(c, "proclaim"), "other Client": election.New(other, "proclaim")} {
		err := o.Proclaim(ctx, "usurper")
		wantErr(t, err, lease.ErrNotHeld)
		if got, _ := e.Leader(ctx); got.Value != "v2" {
			t.Fatalf("%s: a Proclaim without leading changed the value to %q", what, got.Value)
		}
	}

	release(t, ls)
	wantErr(t, e.Proclaim(ctx, "after"), lease.ErrNotHeld)
	if n, _ := srv.Do("EXISTS", "{proclaim}:leader").AsInt64(); n != 0 {
		t.Fatal("a Proclaim after resigning wrote the leader key")
	}
}

func TestLeader(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxTimeout(t, 20*time.Second)
	c, other := open(t, srv), open(t, srv)
	e := election.New(c, "who")
	_, err := e.Leader(ctx)
	wantErr(t, err, election.ErrNoLeader)
	var le *lease.Error
	if !errors.As(err, &le) || le.Op != "leader" || le.Name != "who" {
		t.Fatalf("error %v: want a *lease.Error of op leader on who", err)
	}
	ls := campaign(t, e, ctx, "10.0.0.1:80")
	for _, o := range []*election.Election{e, election.New(other, "who")} {
		got, err := o.Leader(ctx)
		if err != nil || got != of(ls, "10.0.0.1:80") {
			t.Fatalf("Leader = %+v, %v; want %+v", got, err, of(ls, "10.0.0.1:80"))
		}
	}
	release(t, ls)
	_, err = e.Leader(ctx)
	wantErr(t, err, election.ErrNoLeader)
}

// A Campaign under the leadership's Context re-enters it: same term,
// new value; the leadership ends with the last of its leases.
func TestReentrantCampaign(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxTimeout(t, 20*time.Second)
	e := election.New(open(t, srv), "again")
	outer := campaign(t, e, ctx, "v1")
	inner := campaign(t, e, outer.Context(), "v2")
	if inner.HoldCount() != 2 || inner.Owner() != outer.Owner() || inner.Token() != outer.Token() {
		t.Fatalf("re-entry: hold count %d, owner %s (outer %s), token %d (outer %d)",
			inner.HoldCount(), inner.Owner(), outer.Owner(), inner.Token(), outer.Token())
	}
	if got, _ := e.Leader(ctx); got != of(outer, "v2") {
		t.Fatalf("Leader after re-entry = %+v, want %+v (the term is the first campaign's)", got, of(outer, "v2"))
	}
	release(t, inner)
	if err := e.Proclaim(ctx, "v3"); err != nil {
		t.Fatalf("Proclaim with the outer lease still held: %v", err)
	}
	if got, _ := e.Leader(ctx); got != of(outer, "v3") {
		t.Fatalf("Leader = %+v, want %+v", got, of(outer, "v3"))
	}
	release(t, outer)
	_, err := e.Leader(ctx)
	wantErr(t, err, election.ErrNoLeader)
}

// Resigning leaves nothing behind: the lock and the leader key go at once,
// the fencing counter within the lease (as for every lock).
func TestNoKeyLeftAfterResign(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxTimeout(t, 20*time.Second)
	e := election.New(open(t, srv), "tidy")
	ls := campaign(t, e, ctx, "v1")
	inner := campaign(t, e, ls.Context(), "v2")
	if err := e.Proclaim(ctx, "v3"); err != nil {
		t.Fatal(err)
	}
	release(t, inner)
	release(t, ls)
	if n, _ := srv.Do("EXISTS", "tidy", "{tidy}:leader").AsInt64(); n != 0 {
		t.Fatalf("%d of the lock and the leader key left after resigning", n)
	}
	eventually(t, watchdog+5*time.Second, "no key left", func() bool {
		keys, err := srv.Do("KEYS", "*").AsStrSlice()
		return err == nil && len(keys) == 0
	})
}

// The leader key takes the lock's lease and is renewed with it: it outlives
// many leases while the leader lives, and expires with a fixed lease.
func TestLeaderKeyLivesWithLock(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxTimeout(t, 20*time.Second)
	c := open(t, srv)
	e := election.New(c, "renewed")
	ls := campaign(t, e, ctx, "v")
	time.Sleep(3 * watchdog) // three leases: renewed, or it would be gone
	for _, key := range []string{"renewed", "{renewed}:leader"} {
		ms, err := srv.Do("PTTL", key).AsInt64()
		if err != nil || ms <= 0 || ms > watchdog.Milliseconds() {
			t.Fatalf("PTTL %s = %d, %v; want within the %v lease", key, ms, err, watchdog)
		}
	}
	if got, err := e.Leader(ctx); err != nil || got != of(ls, "v") || isLost(ls) {
		t.Fatalf("Leader after three leases = %+v, %v (lost: %v)", got, err, isLost(ls))
	}
	release(t, ls)

	fixed := election.New(c, "fixed", leasehold.WithLeaseTime(300*time.Millisecond))
	ls = campaign(t, fixed, ctx, "v")
	if ms, _ := srv.Do("PTTL", "{fixed}:leader").AsInt64(); ms <= 0 || ms > 300 {
		t.Fatalf("leader key PTTL %dms under a 300ms lease", ms)
	}
	select {
	case <-ls.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("a fixed lease was not lost within 5s of its 300ms")
	}
	eventually(t, 5*time.Second, "both keys expired", func() bool {
		n, err := srv.Do("EXISTS", "fixed", "{fixed}:leader").AsInt64()
		return err == nil && n == 0
	})
	_, err := fixed.Leader(ctx)
	wantErr(t, err, election.ErrNoLeader)
}

// A Redisson RLock and the election exclude each other on one name, and
// Redisson's unlock wakes a campaigner. The lock hash has the leader's owner
// field and nothing else: the value is in a key of its own.
func TestRedissonInterop(t *testing.T) {
	srv := redistest.Start(t)
	java := srv.Client()
	c := open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	e := election.New(c, "shared")

	if !javaLock(t, java, "shared") {
		t.Fatal("Redisson could not take a free lock")
	}
	_, err := e.Leader(ctx)
	wantErr(t, err, election.ErrNoLeader) // Redisson holds, but published no value
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = e.Campaign(short, "go")
	cancel()
	wantErr(t, err, context.DeadlineExceeded)

	ch := campaignAsync(t, e, ctx, "go")
	eventually(t, 5*time.Second, "campaigner waiting", func() bool { return c.Stats().Waiters == 1 })
	unlocked := time.Now()
	javaUnlock(t, java, "shared")
	ls := won(t, ch, 10*time.Second)
	// Redisson's lease was 30s: only the unlock message can explain this.
	if el := time.Since(unlocked); el > 5*time.Second {
		t.Fatalf("led %v after Redisson's unlock", el)
	}
	if fields, _ := srv.Do("HGETALL", "shared").AsStrMap(); len(fields) != 1 || fields[ls.Owner()] != "1" {
		t.Fatalf("lock hash %v: want only the leader's owner field", fields)
	}

	if javaLock(t, java, "shared") {
		t.Fatal("Redisson took the lock of a leader")
	}
	javaUnlock(t, java, "shared")
	if got, err := e.Leader(ctx); err != nil || got != of(ls, "go") {
		t.Fatalf("Leader after Redisson's tries = %+v, %v", got, err)
	}
	release(t, ls)
	if !javaLock(t, java, "shared") {
		t.Fatal("Redisson could not take the lock after the leader resigned")
	}
	javaUnlock(t, java, "shared")
}

// Bad input is reported by the first call, wrapped in a *lease.Error; New
// never panics, and Observe closes its channel at once.
func TestBadInput(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	closed := open(t, srv)
	closed.Close()
	ctx := ctxTimeout(t, 5*time.Second)
	tests := []struct {
		name string
		e    *election.Election
		want error
	}{
		{"nil client", election.New(nil, "x"), lease.ErrInvalid},
		{"nil client, empty name", election.New(nil, ""), lease.ErrInvalid},
		{"empty name", election.New(c, ""), lease.ErrInvalid},
		{"zero lease time", election.New(c, "x", leasehold.WithLeaseTime(0)), lease.ErrInvalid},
		{"closed client", election.New(closed, "x"), lease.ErrClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.e.Campaign(ctx, "v")
			wantErr(t, err, tt.want)
			wantErr(t, tt.e.Proclaim(ctx, "v"), tt.want)
			_, err = tt.e.Leader(ctx)
			wantErr(t, err, tt.want)
			select {
			case l, ok := <-tt.e.Observe(ctx):
				if ok {
					t.Fatalf("Observe reported %+v", l)
				}
			case <-time.After(time.Second):
				t.Fatal("Observe's channel not closed")
			}
		})
	}
}

// Closing the leader's Client resigns: its lease is lost with
// lease.ErrClosed, Close releases the lock and deletes the leader key, and
// the next campaigner leads at once (the lease is 30s).
func TestLeaderClientClosed(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxTimeout(t, 20*time.Second)
	leader, next := openSlow(t, srv), openSlow(t, srv)
	la := campaign(t, election.New(leader, "closing"), ctx, "a")
	ch := campaignAsync(t, election.New(next, "closing"), ctx, "b")
	eventually(t, 5*time.Second, "campaigner waiting", func() bool { return next.Stats().Waiters == 1 })
	leader.Close()
	wantErr(t, la.Err(), lease.ErrClosed)
	lb := won(t, ch, 5*time.Second)
	if got, err := election.New(next, "closing").Leader(ctx); err != nil || got != of(lb, "b") {
		t.Fatalf("Leader = %+v, %v; want %+v", got, err, of(lb, "b"))
	}
	release(t, lb)
}

// Lead leads while fn runs (Leader names its value and Proclaim speaks for
// it), resigns when fn returns, and reports a leadership lost under fn.
func TestLead(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxTimeout(t, 30*time.Second)
	e, watcher := election.New(open(t, srv), "lead"), election.New(open(t, srv), "lead")
	err := e.Lead(ctx, "a", func(ctx context.Context) error {
		if l, err := watcher.Leader(ctx); err != nil || l.Value != "a" {
			return fmt.Errorf("Leader under fn = %+v, %v; want a", l, err)
		}
		if err := e.Proclaim(ctx, "a2"); err != nil {
			return fmt.Errorf("Proclaim under fn: %w", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watcher.Leader(ctx); !errors.Is(err, election.ErrNoLeader) {
		t.Fatalf("Leader after Lead returned = %v; want ErrNoLeader (resigned)", err)
	}

	short := election.New(open(t, srv), "lead", leasehold.WithLeaseTime(300*time.Millisecond))
	err = short.Lead(ctx, "b", func(ctx context.Context) error {
		<-ctx.Done() // the term runs out
		return nil
	})
	if !errors.Is(err, lease.ErrLost) {
		t.Fatalf("Lead whose term ran out = %v; want an error wrapping ErrLost", err)
	}
}
