package rlock_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/script"
)

func TestBadInput(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	closed := open(t, srv)
	closed.Close()
	ctx := ctxTimeout(t, 5*time.Second)
	tests := []struct {
		name string
		lock *rlock.Lock
		want error
	}{
		{"empty name", rlock.New(c, ""), lease.ErrInvalid},
		{"zero lease time", rlock.New(c, "x", leasehold.WithLeaseTime(0)), lease.ErrInvalid},
		{"negative lease time", rlock.New(c, "x", leasehold.WithLeaseTime(-time.Second)), lease.ErrInvalid},
		{"nil client", rlock.New(nil, "x"), lease.ErrInvalid},
		{"closed client", rlock.New(closed, "x"), lease.ErrClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.lock.Acquire(ctx)
			wantErr(t, err, tt.want)
			_, err = tt.lock.TryAcquire(ctx)
			wantErr(t, err, tt.want)
			_, err = tt.lock.AcquireAsync(ctx).Result()
			wantErr(t, err, tt.want)
			_, err = tt.lock.IsLocked(ctx)
			wantErr(t, err, tt.want)
			_, err = tt.lock.RemainTTL(ctx)
			wantErr(t, err, tt.want)
			_, err = tt.lock.ForceRelease(ctx)
			wantErr(t, err, tt.want)
		})
	}
	t.Run("zero watchdog", func(t *testing.T) {
		_, err := leasehold.Open(srv.Option(), leasehold.WithWatchdog(0))
		wantErr(t, err, lease.ErrInvalid)
	})
	t.Run("nil rueidis client", func(t *testing.T) {
		_, err := leasehold.New(nil)
		wantErr(t, err, lease.ErrInvalid)
	})
	t.Run("error names the lock", func(t *testing.T) {
		_, err := rlock.New(c, "named", leasehold.WithLeaseTime(-1)).Acquire(ctx)
		if err == nil || !contains(err.Error(), "named") {
			t.Fatalf("error %v does not name the lock", err)
		}
	})
	t.Run("every error names the lock", func(t *testing.T) {
		held := mustAcquire(t, rlock.New(c, "busy-named"), ctx)
		defer release(t, held)
		short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		gone, cancelGone := context.WithCancel(context.Background())
		cancelGone()
		for _, tc := range []struct {
			what   string
			name   string
			lock   *rlock.Lock
			ctx    context.Context
			target error
		}{
			{"wait ended by ctx", "busy-named", rlock.New(c, "busy-named"), short, context.DeadlineExceeded},
			{"ctx ended before", "busy-named", rlock.New(c, "busy-named"), gone, context.Canceled},
			{"closed Client", "closed-named", rlock.New(closed, "closed-named"), ctx, lease.ErrClosed},
			{"bad option", "opt-named", rlock.New(c, "opt-named", leasehold.WithLeaseTime(-1)), ctx, lease.ErrInvalid},
		} {
			_, err := tc.lock.Acquire(tc.ctx)
			wantErr(t, err, tc.target)
			if !contains(err.Error(), tc.name) {
				t.Errorf("%s: error %q does not name the lock", tc.what, err)
			}
		}
		_, err := rlock.New(c, "busy-named").TryAcquire(ctx)
		if wantErr(t, err, lease.ErrNotAcquired); !contains(err.Error(), "busy-named") {
			t.Errorf("TryAcquire: error %q does not name the lock", err)
		}
	})
	t.Run("already cancelled ctx", func(t *testing.T) {
		cctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := rlock.New(c, "x").Acquire(cctx)
		wantErr(t, err, context.Canceled)
	})
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// A release whose reply is lost is retried under the same request id: the
// retry neither fails nor gives up a second hold. Without the unlock latch,
// the retried inner release would decrement again and free a lock the outer
// lease still holds.
func TestReleaseRetriedAfterLostReply(t *testing.T) {
	srv := redistest.Start(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	opt := srv.Option()
	opt.InitAddress = []string{proxy.Addr()}
	c, err := leasehold.Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	other := open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	l := rlock.New(c, "retried")

	// Load the scripts first, so that the dropped reply is the release's own.
	warm := mustAcquire(t, l, ctx)
	release(t, warm)

	outer := mustAcquire(t, l, ctx)
	inner := mustAcquire(t, l, outer.Context())
	proxy.DropNextReply()
	if err := inner.Release(ctx); err != nil {
		t.Fatalf("inner Release with its reply lost: %v", err)
	}
	if proxy.Dropped() != 1 {
		t.Fatalf("the proxy dropped %d replies, want the release's", proxy.Dropped())
	}
	if all, _ := srv.Do("HGETALL", "retried").AsStrMap(); len(all) != 1 {
		t.Fatalf("lock hash after the retried inner release: %v, want the outer hold", all)
	} else {
		for _, n := range all {
			if n != "1" {
				t.Fatalf("hold count %s after the retried inner release, want 1", n)
			}
		}
	}
	_, err = rlock.New(other, "retried").TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)

	proxy.DropNextReply()
	if err := outer.Release(ctx); err != nil {
		t.Fatalf("outer Release with its reply lost: %v", err)
	}
	if proxy.Dropped() != 2 {
		t.Fatalf("the proxy dropped %d replies, want both releases'", proxy.Dropped())
	}
	if n, _ := srv.Do("EXISTS", "retried").AsInt64(); n != 0 {
		t.Fatal("lock still held after the retried release")
	}
	if isLost(outer) {
		t.Fatalf("a retried release reported the lease lost: %v", outer.Err())
	}
}

// The latch itself: the same request id twice releases once.
func TestReleaseLatchScript(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := ctxTimeout(t, 5*time.Second)
	l := rlock.New(c, "latched")
	outer := mustAcquire(t, l, ctx)
	_ = mustAcquire(t, l, outer.Context())
	owner, _ := srv.Do("HKEYS", "latched").AsStrSlice()
	run := func() int64 {
		n, err := srv.Do("EVAL", releaseScript(t), "3", "latched", "redisson_lock__channel:{latched}",
			"redisson_unlock_latch:{latched}:req-1", "0", "30000", owner[0], "5000", "0").AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if first, again := run(), run(); first != 0 || again != 0 {
		t.Fatalf("release answers %d then %d, want 0 (still held) twice", first, again)
	}
	if n, _ := srv.Do("HGET", "latched", owner[0]).ToString(); n != "1" {
		t.Fatalf("hold count %s after one release sent twice, want 1", n)
	}
}

func releaseScript(t *testing.T) string {
	t.Helper()
	i := slices.IndexFunc(script.All(), func(s script.Script) bool { return s.Name == "lock_release" })
	s, ok := script.Script{}, i >= 0
	if ok {
		s = script.All()[i]
	}
	if !ok {
		t.Fatal("no lock_release script")
	}
	return s.Source
}

// An acquire whose reply is lost did take the lock; the engine undoes it in
// the background and tries again. Pins a failure where the retry, under the
// same owner, re-entered the lock at once and the undo then freed it: the
// caller held a lease on a lock Redis no longer had.
func TestLostAcquireReplyIsUndone(t *testing.T) {
	srv := redistest.Start(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	opt := srv.Option()
	opt.InitAddress = []string{proxy.Addr()}
	c, err := leasehold.Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := ctxTimeout(t, 10*time.Second)
	l := rlock.New(c, "undone")
	warm := mustAcquire(t, l, ctx) // load the scripts
	release(t, warm)

	proxy.DropNextReply()
	ls := mustAcquire(t, l, ctx)
	if proxy.Dropped() != 1 {
		t.Fatalf("the proxy dropped %d replies, want the acquire's", proxy.Dropped())
	}
	// The undo runs in the background within a few backoff steps (20ms
	// and up); give it ample time to do harm if it could.
	time.Sleep(500 * time.Millisecond)
	owners, _ := srv.Do("HKEYS", "undone").AsStrSlice()
	if len(owners) != 1 {
		t.Fatalf("lock hash owners %v, want the lease's alone", owners)
	}
	// Owners are drawn in sequence per Client: the warm-up took :1, the
	// attempt whose reply was lost :2. Its undo may run at any moment, so
	// the lease must be held under another owner; the undo usually wins
	// the race, which is why this is checked rather than waited for.
	if lost := c.ID() + ":2"; owners[0] == lost {
		t.Fatalf("the lease is held under %s, the owner whose attempt is being undone", lost)
	}
	if isLost(ls) {
		t.Fatalf("lease lost: %v", ls.Err())
	}
	if err := ls.Release(ctx); err != nil {
		t.Fatalf("Release of the lease won after a lost reply: %v", err)
	}
}

// A release whose reply is lost while Redis stays out of reach for longer
// than the release's bound is not confirmed: the lease is still held, as far
// as anyone can tell. Pins two failures once Redis is back: the next
// renewal, finding the owner gone because the release did apply, reported
// the lease lost; and a Release tried again, told "not held", reported it
// lost too. Both are the release it was. (The Client has no tracking
// connection, whose invalidation could otherwise be the dropped reply.)
func TestUnconfirmedReleaseIsNotALoss(t *testing.T) {
	srv := redistest.Start(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	opt := locktest.Denied(t, srv, "client") // no CLIENT TRACKING: no guard connection
	opt.InitAddress, opt.DisableCache = []string{proxy.Addr()}, true
	// A watchdog renewed every 3s, whose lease outlasts the release's 5s.
	c := locktest.OpenAt(t, opt, leasehold.WithWatchdog(9*time.Second))
	ctx := ctxTimeout(t, 30*time.Second)
	l := rlock.New(c, "unconfirmed")
	release(t, mustAcquire(t, l, ctx)) // load the scripts

	for _, again := range []bool{false, true} {
		ls := mustAcquire(t, l, ctx)
		proxy.Refuse(true)
		proxy.DropNextReply() // the release runs, its reply is lost, no connection comes back
		err := ls.Release(context.Background())
		proxy.Refuse(false)
		if err == nil || errors.Is(err, lease.ErrNotHeld) {
			t.Fatalf("Release with Redis out of reach = %v; want it not confirmed", err)
		}
		if n, _ := srv.Do("EXISTS", "unconfirmed").AsInt64(); n != 0 {
			t.Fatal("the lock is still in Redis: the release did not run")
		}
		if again {
			// Released again by its holder: told "not held", it was ours.
			if err := ls.Release(ctx); err != nil {
				t.Fatalf("Release again after the unconfirmed one = %v; want nil", err)
			}
		} else {
			// The next renewal finds the owner gone: the release it was.
			eventually(t, 10*time.Second, "the hold ended", func() bool { return ls.Context().Err() != nil })
		}
		if err := ls.Err(); err != nil {
			t.Fatalf("the lease after its release applied: %v; want it released, not lost", err)
		}
	}
}

// A release that Redis refuses (here a string written over the lock's hash:
// WRONGTYPE) would be refused again: the hold is no longer kept, rather
// than renewed for a holder that has let it go (lease.Do would otherwise
// return with its lock renewed by nobody). Pins a hold left renewable.
func TestRefusedReleaseStopsRenewal(t *testing.T) {
	srv := redistest.Start(t)
	opt := locktest.Denied(t, srv, "client") // no guard to hear the overwrite first
	opt.DisableCache = true
	c := locktest.OpenAt(t, opt)
	ctx := ctxTimeout(t, 10*time.Second)
	ls := mustAcquire(t, rlock.New(c, "refused"), ctx)
	if err := srv.Do("SET", "refused", "not a lock").Error(); err != nil {
		t.Fatal(err)
	}
	err := ls.Release(ctx)
	wantErr(t, err, lease.ErrRedis)
	wantErr(t, ls.Err(), lease.ErrLost)
	if n := c.Stats().Leases; n != 0 {
		t.Fatalf("%d holds still kept (and renewed) after the refused release", n)
	}
}
