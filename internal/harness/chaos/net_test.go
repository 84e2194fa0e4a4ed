package chaos

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/harness/redistest"
)

// expiry watches owner's hold on the lock name from the test's own
// connection, straight to the server, until the hold is gone, and returns
// when it ran out on the server's clock, on CLOCK_MONOTONIC. Each reading
// (now + PTTL, now taken before the request left) can only underestimate the
// expiry; the latest of them is kept. A renewal that lands late moves it on.
func expiry(t *testing.T, rc rueidis.Client, name, owner string, d time.Duration) Mono {
	t.Helper()
	deadline := time.Now().Add(d)
	var end Mono
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		sent := Now()
		res := rc.DoMulti(ctx, rc.B().Hexists().Key(name).Field(owner).Build(), rc.B().Pttl().Key(name).Build())
		cancel()
		held, err1 := res[0].AsBool()
		ms, err2 := res[1].AsInt64()
		switch {
		case err1 != nil || err2 != nil:
		case !held:
			if end == 0 {
				t.Fatalf("%s: owner %s did not hold the lock", name, owner)
			}
			return end
		case ms > 0:
			end = max(end, sent.Add(time.Duration(ms)*time.Millisecond))
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%s: owner %s still held the lock after %v", name, owner, d)
	return 0
}

// victimLease is the watchdog lease of the holders whose loss is timed. A
// holder's local deadline precedes the lock's expiry on the server by the
// drift margin, lease/50 + 2ms: 32ms for 1.5s, room for a timer that fires
// late on a loaded 2-core machine under -race (20ms for the 900ms of the
// other workers would be tight). With the default 30s lease it is 602ms.
const victimLease = 1500 * time.Millisecond

// owners is the owner fields of the lock hash name.
func owners(t *testing.T, srv *redistest.Server, name string) []string {
	t.Helper()
	fs, err := srv.Do("HKEYS", name).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// Connections cut and slowed by a TCP proxy between a worker and Redis.
// Cut (and new connections refused) while a worker holds the lock: the
// holder can no longer renew, and its lease is lost before the lock runs
// out on the server, by a margin this test measures; once the proxy lets
// connections through again the worker reconnects, its waiting goroutine
// hears of releases again (its subscription is made anew), and it takes the
// lock again. Slowed (a delay each way on every worker's connection): the
// locks go on working, with no overlap.
func TestProxyFaults(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client()
	base := defaults(KindRLock, "proxy", srv.Addr())
	r := newRig(t, base)
	var proxies []*redistest.Proxy
	var ws []*proc
	for i := range 3 {
		p := redistest.NewProxy(t, srv.Addr())
		proxies = append(proxies, p)
		ws = append(ws, r.spawn("w"+strconv.Itoa(i), func(c *WorkerConfig) { c.Addrs = []string{p.Addr()} }))
	}
	r.ready(ws...)

	type cut struct {
		holder string
		token  uint64
		end    Mono
	}
	var cuts []cut
	for i := range pick(2, 8) {
		pv := redistest.NewProxy(t, srv.Addr())
		// Two goroutines: one holds (for 2 leases) when the cut comes, the
		// other waits for the lock on the same Client.
		v := r.spawn("cut"+strconv.Itoa(i), func(c *WorkerConfig) {
			c.Addrs, c.Goroutines, c.Watchdog, c.Hold = []string{pv.Addr()}, 2, victimLease, 2*victimLease
		})
		enter := r.await(30*time.Second, "enter by "+v.id, enterOf(v.id), r.writes(), 1)
		os := owners(t, srv, base.Name)
		if len(os) != 1 {
			t.Fatalf("lock owners %v while %s holds it", os, enter.Holder)
		}
		f := r.fault("connection cut (proxy)", 1)
		pv.Refuse(true)
		pv.Cut()
		end := expiry(t, rc, base.Name, os[0], 10*time.Second)
		at := r.writes()
		pv.Refuse(false)
		f.heal()
		r.await(30*time.Second, v.id+" back after the cut", enterOf(v.id), at, 1)
		r.finish(v)
		cuts = append(cuts, cut{enter.Holder, enter.Token, end})
	}

	delay := pick(20*time.Millisecond, 50*time.Millisecond)
	slowed := r.fault("connection delayed (proxy)", len(proxies))
	for _, p := range proxies {
		p.Delay(delay)
	}
	r.progress(r.writes(), 40, 60*time.Second, "through slowed connections")
	for _, p := range proxies {
		p.Delay(0)
	}
	slowed.heal()

	_, secs := r.check(waitSlack)
	for _, c := range cuts {
		s := section(t, secs, c.holder, c.token)
		if s.Lost == 0 {
			t.Errorf("%s token %d: lease not lost after its connection was cut", c.holder, c.token)
			continue
		}
		margin := c.end.Sub(s.Lost)
		totals.margin("proxy cut", margin)
		t.Logf("%s token %d: lost %v before the lock ran out on the server (%s)", c.holder, c.token, margin, s.LostErr)
		if margin <= 0 {
			t.Errorf("%s token %d: lease lost %v after the lock ran out on the server", c.holder, c.token, -margin)
		}
	}
}

// CLIENT PAUSE and DEBUG SLEEP of the server for twice the lease, while a
// worker is in its critical section: nothing reaches the server, so the
// holder cannot renew; it learns of the loss at its local deadline, before
// the lock runs out on the server (measured), and acts no more, so when the
// server comes back and another worker takes the lock, nobody overlaps.
// Waiters whose ctx deadline falls in the pause return by it.
func TestServerPause(t *testing.T) {
	srv := redistest.Start(t, "--enable-debug-command", "local")
	rc := srv.Client()
	base := defaults(KindRLock, "srvpause", srv.Addr())
	base.Wait = time.Second // shorter than the pause
	r := newRig(t, base)
	r.ready(r.spawnN("w", 3, nil)...)
	pause := 2 * base.Watchdog // longer than the victim's lease, by 300ms
	type caught struct {
		holder string
		token  uint64
		end    Mono
		how    string
	}
	var got []caught
	for i := range pick(2, 8) {
		how := "CLIENT PAUSE"
		cmd := rc.B().Arbitrary("CLIENT", "PAUSE", strconv.FormatInt(pause.Milliseconds(), 10), "ALL").Build()
		if i%2 == 1 {
			how = "DEBUG SLEEP"
			cmd = rc.B().Arbitrary("DEBUG", "SLEEP", strconv.FormatFloat(pause.Seconds(), 'f', 3, 64)).Build()
		}
		// A victim that stays in its section for longer than the pause.
		v := r.spawn("victim"+strconv.Itoa(i), func(c *WorkerConfig) {
			c.Goroutines, c.Watchdog, c.Hold = 1, victimLease, 2*pause
		})
		enter := r.await(30*time.Second, "enter by "+v.id, enterOf(v.id), r.writes(), 1)
		// Its lease is read in the same pipeline that pauses the server:
		// nothing runs in between.
		ctx, cancel := context.WithTimeout(context.Background(), pause+5*time.Second)
		f := r.fault(how+" > lease", 1)
		sent := Now()
		res := rc.DoMulti(ctx, rc.B().Pttl().Key(base.Name).Build(), cmd)
		cancel()
		ms, err := res[0].AsInt64()
		if err != nil || ms <= 0 {
			t.Fatalf("PTTL of the held lock: %d, %v", ms, err)
		}
		if err := res[1].Error(); err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		got = append(got, caught{enter.Holder, enter.Token, sent.Add(time.Duration(ms) * time.Millisecond), how})
		eventually(t, pause+5*time.Second, "the server back", func() bool { return srv.Do("PING").Error() == nil })
		f.heal()
		r.progress(r.writes(), 4, 30*time.Second, "after the "+how)
		r.finish(v)
	}
	_, secs := r.check(waitSlack)
	for _, c := range got {
		s := section(t, secs, c.holder, c.token)
		if s.Lost == 0 {
			t.Errorf("%s: %s token %d not lost though the server was away for %v", c.how, c.holder, c.token, pause)
			continue
		}
		margin := c.end.Sub(s.Lost)
		totals.margin(c.how, margin)
		t.Logf("%s: %s token %d lost %v before the lock's TTL ended on the server (%s)", c.how, c.holder, c.token, margin, s.LostErr)
		if margin <= 0 {
			t.Errorf("%s: %s token %d lost %v after the lock's TTL ended on the server", c.how, c.holder, c.token, -margin)
		}
	}
}
