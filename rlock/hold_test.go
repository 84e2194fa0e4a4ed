package rlock_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

// WithHoldAtLeast: a lease released sooner than d after its acquisition
// leaves the lock taken, by no holder, until d after the acquisition, then
// free; released later, free at once. The bounds that depend on timing only
// one way are exact: the lock cannot be free before d has passed since the
// acquisition was sent, since the keep is counted from its reply. Those that
// depend on the machine's load (how soon after d it is free) are generous.
func TestHoldAtLeast(t *testing.T) {
	srv := redistest.Start(t)
	c, other := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 30*time.Second)
	const d = 800 * time.Millisecond

	// keptUntil releases ls at once and returns when the lock became free,
	// checking that it was kept, by no holder, until at least d after sent.
	keptUntil := func(t *testing.T, name string, sent time.Time, ls *lease.Lease) time.Time {
		t.Helper()
		release(t, ls)
		m, err := srv.Do("HGETALL", name).AsStrMap()
		if err != nil || len(m) != 1 || m["leasehold:kept"] != ls.Owner() {
			t.Fatalf("after an early release, HGETALL %s = %v, %v; want leasehold:kept -> %s", name, m, err, ls.Owner())
		}
		if ttl, _ := srv.Do("PTTL", name).AsInt64(); ttl <= 0 || time.Duration(ttl)*time.Millisecond > d {
			t.Fatalf("the kept lock's PTTL is %dms, want in (0, %v]", ttl, d)
		}
		_, err = rlock.New(other, name).TryAcquire(ctx)
		wantErr(t, err, lease.ErrNotAcquired)
		for {
			n, err := srv.Do("EXISTS", name).AsInt64()
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			if n == 0 {
				if now.Before(sent.Add(d)) {
					t.Fatalf("free %v after the acquisition was sent, before %v", now.Sub(sent), d)
				}
				return now
			}
			if now.After(sent.Add(d + 5*time.Second)) {
				t.Fatalf("still kept %v after the acquisition was sent", now.Sub(sent))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	t.Run("watchdog lease released at once", func(t *testing.T) {
		sent := time.Now()
		ls := mustAcquire(t, rlock.New(c, "job-watchdog", leasehold.WithHoldAtLeast(d)), ctx)
		keptUntil(t, "job-watchdog", sent, ls)
		release(t, mustAcquire(t, rlock.New(other, "job-watchdog"), ctx))
	})

	t.Run("fixed lease shorter than d", func(t *testing.T) {
		// The lock is kept d after the acquisition even though its lease
		// was to run out sooner: the keep is what the release leaves.
		sent := time.Now()
		l := rlock.New(c, "job-fixed", leasehold.WithLeaseTime(300*time.Millisecond), leasehold.WithHoldAtLeast(d))
		keptUntil(t, "job-fixed", sent, mustAcquire(t, l, ctx))
	})

	t.Run("reentrant leases", func(t *testing.T) {
		sent := time.Now()
		l := rlock.New(c, "job-reentrant", leasehold.WithHoldAtLeast(d))
		outer := mustAcquire(t, l, ctx)
		inner := mustAcquire(t, l, outer.Context())
		release(t, inner)
		if n, _ := srv.Do("HGET", "job-reentrant", outer.Owner()).ToString(); n != "1" {
			t.Fatalf("hold count %q after the inner release, want 1", n)
		}
		keptUntil(t, "job-reentrant", sent, outer)
	})

	t.Run("released after d", func(t *testing.T) {
		const short = 50 * time.Millisecond
		ls := mustAcquire(t, rlock.New(c, "job-long", leasehold.WithHoldAtLeast(short)), ctx)
		time.Sleep(2 * short) // the job runs longer than the hold
		release(t, ls)
		if n, _ := srv.Do("EXISTS", "job-long").AsInt64(); n != 0 {
			t.Fatal("a lease released after its hold-at-least left the lock taken")
		}
	})

	t.Run("waiter wakes at the end of the keep", func(t *testing.T) {
		// The waiter starts while the holder holds a 30s watchdog lease: it
		// learns of the shorter keep at the release, not 30s later, and
		// takes the lock when the keep runs out.
		sent := time.Now()
		ls := mustAcquire(t, rlock.New(c, "job-waited", leasehold.WithHoldAtLeast(d)), ctx)
		f := rlock.New(other, "job-waited").AcquireAsync(ctx)
		eventually(t, 5*time.Second, "the waiter waits", func() bool { return other.Stats().Waiters == 1 })
		release(t, ls)
		got, err := f.Result()
		if err != nil {
			t.Fatal(err)
		}
		defer release(t, got)
		took := time.Since(sent)
		t.Logf("the waiter took the lock %v after the holder's acquisition was sent (hold at least %v)", took, d)
		if took < d {
			t.Fatalf("the waiter took the lock %v after the acquisition, before %v", took, d)
		}
		if took > d+5*time.Second {
			t.Fatalf("the waiter took the lock %v after the acquisition: it waited for the 30s lease, not the keep", took)
		}
	})

	t.Run("no key outlives max(d, lease)", func(t *testing.T) {
		// The keep is counted from the acquisition's reply (got is later)
		// and applied when the release reaches Redis, which the release's
		// own round trip bounds: slack, the one margin of the check.
		const lease = 300 * time.Millisecond
		l := rlock.New(c, "job-keys", leasehold.WithLeaseTime(lease), leasehold.WithHoldAtLeast(d))
		ls := mustAcquire(t, l, ctx)
		got := time.Now()
		release(t, ls)
		slack := time.Since(got) + time.Millisecond // the release's round trip, the keep's rounding up
		keys, err := srv.Do("KEYS", "*job-keys*").AsStrSlice()
		if err != nil || len(keys) != 2 {
			t.Fatalf("KEYS = %v, %v; want the kept lock and its fencing counter", keys, err)
		}
		for _, k := range keys {
			since := time.Since(got)
			ttl, _ := srv.Do("PTTL", k).AsInt64()
			if left := max(d, lease) - since + slack; ttl < 0 || time.Duration(ttl)*time.Millisecond > left {
				t.Errorf("key %s: PTTL %dms %v after the acquisition, more than the %v left of max(d, lease)", k, ttl, since, left)
			}
		}
	})
}

// Redisson's own scripts, run verbatim as a Java service on the same lock
// would run them, find a lock kept by WithHoldAtLeast held: its lock script
// returns the rest of the keep as the holder's PTTL (which its waiters time),
// and its unlock script cannot free it. Once the keep is over, Redisson
// takes the lock.
func TestHoldAtLeastRedissonInterop(t *testing.T) {
	srv := redistest.Start(t)
	java := srv.Client()
	c := open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	const d = 800 * time.Millisecond

	sent := time.Now()
	release(t, mustAcquire(t, rlock.New(c, "shared", leasehold.WithHoldAtLeast(d)), ctx))
	pttl, err := java.Do(ctx, java.B().Eval().Script(redistest.RedissonLockScript).Numkeys(1).Key("shared").
		Arg("30000", redistest.JavaOwner).Build()).AsInt64()
	if err != nil {
		t.Fatalf("Redisson's lock script on the kept lock: %v (a nil reply means it took the lock)", err)
	}
	if pttl <= 0 || time.Duration(pttl)*time.Millisecond > d {
		t.Fatalf("Redisson's lock script returned a PTTL of %dms, want the rest of the %v keep", pttl, d)
	}
	// Its unlock script replies nil: the Java owner holds nothing.
	if err := redistest.RedissonUnlock(ctx, java, "shared", "publish"); !rueidis.IsRedisNil(err) {
		t.Fatalf("Redisson's unlock script on the kept lock: %v, want its nil reply", err)
	}
	if n, _ := srv.Do("EXISTS", "shared").AsInt64(); n != 1 {
		t.Fatal("Redisson's unlock freed the kept lock")
	}
	time.Sleep(time.Duration(pttl) * time.Millisecond) // as a Redisson waiter times it
	for !javaLock(t, java, "shared") {
		if time.Since(sent) > d+5*time.Second {
			t.Fatalf("Redisson could not take the lock %v after the acquisition", time.Since(sent))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if el := time.Since(sent); el < d {
		t.Fatalf("Redisson took the lock %v after the acquisition, before the %v keep ran out", el, d)
	}
	javaUnlock(t, java, "shared")
}

// A hold-at-least that is not positive fails the lock's first call with
// ErrInvalid, naming the option, and writes nothing.
func TestHoldAtLeastInvalid(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	for _, d := range []time.Duration{0, -time.Second} {
		_, err := rlock.New(c, "bad", leasehold.WithHoldAtLeast(d)).TryAcquire(ctx)
		wantErr(t, err, lease.ErrInvalid)
		if !strings.Contains(err.Error(), "hold-at-least") {
			t.Errorf("WithHoldAtLeast(%v): %v, want an error naming the hold-at-least", d, err)
		}
	}
	if keys, _ := srv.Do("KEYS", "*").AsStrSlice(); len(keys) != 0 {
		t.Fatalf("refused calls wrote %v", keys)
	}
}
