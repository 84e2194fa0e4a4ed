package rw_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rw"
	"github.com/leasehold/leasehold/script"
)

// The watchdog renews every read hold key of its owner, not just the hash:
// after many lease periods each hold key, reentrant ones included, still
// lives, with a TTL within the lease.
func TestWatchdogRenewsEveryReadHold(t *testing.T) {
	srv := redistest.Start(t)
	const watchdog = 300 * time.Millisecond
	c, other := open(t, srv, leasehold.WithWatchdog(watchdog)), open(t, srv, leasehold.WithWatchdog(watchdog))
	ctx := ctxTimeout(t, 10*time.Second)
	outer := mustAcquire(t, rw.New(c, "renewed").Read(), ctx)
	inner := mustAcquire(t, rw.New(c, "renewed").Read(), outer.Context())
	orl := mustAcquire(t, rw.New(other, "renewed").Read(), ctx)
	keys := []string{
		script.KeysOf("renewed").ReadHolds(ownerOf(t, srv, "renewed", c)) + ":1",
		script.KeysOf("renewed").ReadHolds(ownerOf(t, srv, "renewed", c)) + ":2",
		script.KeysOf("renewed").ReadHolds(ownerOf(t, srv, "renewed", other)) + ":1",
	}
	rounds := c.Stats().RenewalRounds
	time.Sleep(6 * watchdog) // six lease periods: every key would have expired unrenewed
	if n := c.Stats().RenewalRounds - rounds; n < 3 {
		t.Fatalf("%d renewal rounds in 6 watchdog periods", n)
	}
	for _, ls := range []*lease.Lease{outer, inner, orl} {
		if isLost(ls) {
			t.Fatalf("read lease lost: %v", ls.Err())
		}
	}
	for _, k := range append(keys, "renewed") {
		if ttl := pttl(t, srv, k); ttl <= 0 || ttl > watchdog {
			t.Fatalf("PTTL %s = %v, want in (0, %v]", k, ttl, watchdog)
		}
	}
	release(t, inner)
	release(t, outer)
	release(t, orl)
}

// A reader cut off from Redis (its process as good as dead) leaves with its
// own holds' TTL, while the reader still renewing keeps the lock: a writer
// stays out until that reader leaves, and is woken by its release.
func TestDeadReaderLeaves(t *testing.T) {
	srv := redistest.Start(t)
	const watchdog = 600 * time.Millisecond
	proxy := redistest.NewProxy(t, srv.Addr())
	opt := srv.Option()
	opt.InitAddress = []string{proxy.Addr()}
	dying := openOpt(t, opt, leasehold.WithWatchdog(watchdog))
	alive := open(t, srv, leasehold.WithWatchdog(watchdog))
	wc := open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)

	dead := mustAcquire(t, rw.New(dying, "dead").Read(), ctx)
	live := mustAcquire(t, rw.New(alive, "dead").Read(), ctx)
	deadKey := script.KeysOf("dead").ReadHolds(ownerOf(t, srv, "dead", dying)) + ":1"
	liveKey := script.KeysOf("dead").ReadHolds(ownerOf(t, srv, "dead", alive)) + ":1"

	proxy.Refuse(true)
	proxy.Cut()
	select {
	case <-dead.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the cut-off reader never learnt it lost its lease")
	}
	wantErr(t, dead.Err(), lease.ErrLost)
	// Its hold key runs out within its lease (the last renewal's TTL).
	eventually(t, 2*watchdog+time.Second, "dead reader's hold key expired", func() bool { return !exists(t, srv, deadKey) })
	// Several more renewal rounds: the live reader keeps the lock alive.
	rounds := alive.Stats().RenewalRounds
	eventually(t, 5*time.Second, "live reader renewed", func() bool { return alive.Stats().RenewalRounds >= rounds+3 })
	if !exists(t, srv, liveKey) || hash(t, srv, "dead")["mode"] != "read" || isLost(live) {
		t.Fatalf("live reader's hold gone: %v", hash(t, srv, "dead"))
	}
	w := rw.New(wc, "dead").Write()
	_, err := w.TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)

	f := w.AcquireAsync(ctx)
	eventually(t, 5*time.Second, "writer waiting", func() bool { return waiters(wc) == 1 })
	// The dead reader's field is still in the hash, but its holds are gone:
	// the live reader's release frees the lock.
	release(t, live)
	release(t, result(t, f, woken))
}

// The lock's TTL is the longest live read hold's: it stays up while the
// long-lease reader holds, drops to the short one's remaining TTL when the
// long one leaves, and the lock expires with it, letting the writer in.
func TestLockTTLIsLongestReadHold(t *testing.T) {
	srv := redistest.Start(t)
	c, wc := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	const short, long = 800 * time.Millisecond, 20 * time.Second
	sl := mustAcquire(t, rw.New(c, "ttl", leasehold.WithLeaseTime(short)).Read(), ctx)
	ll := mustAcquire(t, rw.New(c, "ttl", leasehold.WithLeaseTime(long)).Read(), ctx)
	if ttl := pttl(t, srv, "ttl"); ttl <= short || ttl > long {
		t.Fatalf("lock TTL %v with a %v and a %v read", ttl, short, long)
	}
	release(t, ll)
	if ttl := pttl(t, srv, "ttl"); ttl <= 0 || ttl > short {
		t.Fatalf("lock TTL %v after the %v read left, want the %v read's", ttl, long, short)
	}
	start := time.Now()
	wl := mustAcquire(t, rw.New(wc, "ttl").Write(), ctx)
	// The writer gets in when the short read runs out (expiry reported by
	// invalidation, or its TTL timer), not after the long read's lease.
	if el := time.Since(start); el > short+woken {
		t.Fatalf("writer waited %v for a read expiring within %v", el, short)
	}
	wantErr(t, sl.Release(ctx), lease.ErrNotHeld)
	release(t, wl)
}

// A lock deleted without any message (a foreign DEL) or expiring still wakes
// its waiters, reader or writer: the invalidation of NAME does.
func TestWakeOnInvalidation(t *testing.T) {
	tests := []struct {
		name  string
		mode  string // mode of the foreign lock
		write bool   // the waiter
		free  func(srv *redistest.Server, key string)
	}{
		{"writer after DEL of a read lock", "read", true, del},
		{"reader after DEL of a write lock", "write", false, del},
		{"writer after expiry of a read lock", "read", true, expire},
	}
	srv := redistest.Start(t)
	c := open(t, srv)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := ctxTimeout(t, 20*time.Second)
			key := "silent" + strconv.Itoa(i)
			field := "foreign:1"
			if tt.mode == "write" {
				field += ":write"
			}
			srv.Do("HSET", key, "mode", tt.mode, field, "1")
			srv.Do("PEXPIRE", key, "30000")
			l := rw.New(c, key).Read()
			if tt.write {
				l = rw.New(c, key).Write()
			}
			f := l.AcquireAsync(ctx)
			eventually(t, 5*time.Second, "waiter subscribed", func() bool { return waiters(c) == 1 })
			time.Sleep(50 * time.Millisecond) // let the waiter settle into its wait
			freed := time.Now()
			tt.free(srv, key)
			ls := result(t, f, woken+time.Second)
			t.Logf("woken %v after the lock was freed", time.Since(freed))
			release(t, ls)
		})
	}
}

func del(srv *redistest.Server, key string) { srv.Do("DEL", key) }

// expire shortens the lock to 300ms: its expiry sends no message.
func expire(srv *redistest.Server, key string) { srv.Do("PEXPIRE", key, "300") }
