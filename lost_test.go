package leasehold_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/election"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/quorum"
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/rw"
	"github.com/leasehold/leasehold/script"
	"github.com/leasehold/leasehold/semaphore"
)

// heard is how long a holder may take to hear that its hold is gone. With
// the default 30s watchdog the next renewal is 10s away and the local
// deadline 29s: only the invalidation path closes Lost this soon. It takes a
// round trip or two; 2s leaves room for a loaded 2-core machine.
const heard = 2 * time.Second

// held is one kind's lease in these tests, with where it lives in Redis.
type held struct {
	lease *lease.Lease
	key   string // the key that holds it
	field string // its field in key (a hash), or its member (a sorted set)
	zset  bool
}

// kinds are the lock kinds, each taking a lease on name with c's defaults.
var holdKinds = []struct {
	name    string
	acquire func(t *testing.T, c *leasehold.Client, name string) held
}{
	{"rlock", func(t *testing.T, c *leasehold.Client, name string) held {
		l := mustHold(t)(rlock.New(c, name).Acquire(context.Background()))
		return held{lease: l, key: name, field: l.Owner()}
	}},
	{"fair", func(t *testing.T, c *leasehold.Client, name string) held {
		l := mustHold(t)(fairqueue.New(c, name).Acquire(context.Background()))
		return held{lease: l, key: name, field: l.Owner()}
	}},
	{"rw read", func(t *testing.T, c *leasehold.Client, name string) held {
		l := mustHold(t)(rw.New(c, name).Read().Acquire(context.Background()))
		return held{lease: l, key: name, field: l.Owner()}
	}},
	{"rw write", func(t *testing.T, c *leasehold.Client, name string) held {
		l := mustHold(t)(rw.New(c, name).Write().Acquire(context.Background()))
		return held{lease: l, key: name, field: l.Owner() + ":write"}
	}},
	{"semaphore", func(t *testing.T, c *leasehold.Client, name string) held {
		s := semaphore.New(c, name)
		if _, err := s.TrySetPermits(context.Background(), 2); err != nil {
			t.Fatal(err)
		}
		l := mustHold(t)(s.Acquire(context.Background()))
		// The lease's one permit, as the layout names it.
		return held{lease: l, key: script.KeysOf(name).SemaphoreTimeout, field: lua.PermitID(l.Owner(), 0), zset: true}
	}},
	{"election", func(t *testing.T, c *leasehold.Client, name string) held {
		l := mustHold(t)(election.New(c, name).Campaign(context.Background(), "here"))
		return held{lease: l, key: name, field: l.Owner()}
	}},
}

func mustHold(t *testing.T) func(*lease.Lease, error) *lease.Lease {
	return func(l *lease.Lease, err error) *lease.Lease {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
}

// causes are what removes a hold from Redis behind its holder's back.
var causes = []struct {
	name string
	do   func(srv *redistest.Server, h held)
}{
	{"DEL", func(srv *redistest.Server, h held) { srv.Do("DEL", h.key) }},
	{"UNLINK", func(srv *redistest.Server, h held) { srv.Do("UNLINK", h.key) }},
	{"FLUSHDB", func(srv *redistest.Server, _ held) { srv.Do("FLUSHDB") }},
	{"FLUSHALL", func(srv *redistest.Server, _ held) { srv.Do("FLUSHALL") }},
	{"expiry", func(srv *redistest.Server, h held) { srv.Do("PEXPIRE", h.key, "1") }},
	{"field removed", func(srv *redistest.Server, h held) { // Redisson's forceUnlock of one owner, a ZREM of a permit
		if h.zset {
			srv.Do("ZREM", h.key, h.field)
		} else {
			srv.Do("HDEL", h.key, h.field)
		}
	}},
	{"overwritten", func(srv *redistest.Server, h held) { srv.Do("SET", h.key, "x") }},
}

// awaitTracked waits until srv tracks more keys than before: the guard has
// read a hold taken since, so that what follows is heard by invalidation,
// not by that first read.
func awaitTracked(t testing.TB, srv *redistest.Server, before int64) {
	t.Helper()
	locktest.Eventually(t, heard, "the guard's first read of the hold", func() bool { return trackedKeys(t, srv) > before })
}

// clientKinds are the ways to make a Client on a server reached with opt:
// Open with rueidis' client-side cache (the default) and without, and New
// over a rueidis client with and without it. rueidis takes the invalidation
// hook only when it makes a client, so only the first of them has the
// invalidations of its own connections; every one has its own tracking
// connection for its holds.
var clientKinds = []struct {
	name string
	open func(t testing.TB, opt rueidis.ClientOption, opts ...leasehold.Option) *leasehold.Client
}{
	{"open", func(t testing.TB, opt rueidis.ClientOption, opts ...leasehold.Option) *leasehold.Client {
		return locktest.OpenAt(t, opt, opts...)
	}},
	{"open-nocache", func(t testing.TB, opt rueidis.ClientOption, opts ...leasehold.Option) *leasehold.Client {
		opt.DisableCache = true
		return locktest.OpenAt(t, opt, opts...)
	}},
	{"new", func(t testing.TB, opt rueidis.ClientOption, opts ...leasehold.Option) *leasehold.Client {
		return newOver(t, opt, opts...)
	}},
	{"new-nocache", func(t testing.TB, opt rueidis.ClientOption, opts ...leasehold.Option) *leasehold.Client {
		opt.DisableCache = true
		return newOver(t, opt, opts...)
	}},
}

// newOver returns a Client made by New over a rueidis client dialled with
// opt; both are closed when the test ends.
func newOver(t testing.TB, opt rueidis.ClientOption, opts ...leasehold.Option) *leasehold.Client {
	t.Helper()
	rc, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	c, err := leasehold.New(rc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Every lease hears within about a round trip that its hold is gone from
// Redis, whatever removed it, for every kind of lock and every kind of
// Client: before, it heard at its next renewal (a third of the watchdog
// lease later, 10s by default) or at its local deadline, while another
// Client could take the lock at once; a Client made by New, or by Open with
// DisableCache, heard only then.
func TestLostAtOnce(t *testing.T) {
	srv := redistest.Start(t)
	for _, ck := range clientKinds {
		t.Run(ck.name, func(t *testing.T) {
			c := ck.open(t, srv.Option())
			if !c.Stats().Tracking {
				t.Fatal("Stats().Tracking = false on a server that offers CLIENT TRACKING")
			}
			for _, k := range holdKinds {
				for _, cause := range causes {
					t.Run(k.name+"/"+cause.name, func(t *testing.T) {
						name := "lost:" + ck.name + ":" + strings.ReplaceAll(k.name, " ", "-") + ":" + cause.name
						tracked := trackedKeys(t, srv)
						h := k.acquire(t, c, name)
						awaitTracked(t, srv, tracked)
						start := time.Now()
						cause.do(srv, h)
						select {
						case <-h.lease.Lost():
						case <-time.After(heard):
							t.Fatalf("Lost still open %v after the %s", heard, cause.name)
						}
						if err := h.lease.Err(); !errors.Is(err, lease.ErrLost) || h.lease.Context().Err() == nil {
							t.Fatalf("Err = %v, context %v; want ErrLost and a cancelled context", err, h.lease.Context().Err())
						}
						t.Logf("heard in %v: %v", time.Since(start).Round(time.Microsecond), h.lease.Err())
						_ = h.lease.Release(context.Background())
					})
				}
			}
		})
	}
}

// An eviction is heard at once too, on every kind of Client: under
// volatile-ttl the lock key, the soonest to expire, is the first evicted
// once memory fills.
func TestLostToEviction(t *testing.T) {
	for _, ck := range clientKinds {
		t.Run(ck.name, func(t *testing.T) {
			srv := redistest.Start(t)
			c := ck.open(t, srv.Option())
			l := mustHold(t)(rlock.New(c, "evicted").Acquire(context.Background()))
			var total int64
			info, err := srv.Do("INFO", "memory").ToString()
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(info, "\r\n") {
				if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
					fmt.Sscan(v, &total)
				}
			}
			srv.Do("CONFIG", "SET", "maxmemory-policy", "volatile-ttl")
			srv.Do("CONFIG", "SET", "maxmemory", fmt.Sprint(total+4<<20))
			big := strings.Repeat("x", 64<<10)
			for i := 0; i < 200; i++ {
				srv.Do("SET", fmt.Sprint("filler:", i), big, "EX", "3600") // OOM refusals once full are fine
				select {
				case <-l.Lost():
					if !errors.Is(l.Err(), lease.ErrLost) {
						t.Fatalf("Err = %v, want ErrLost", l.Err())
					}
					return
				default:
				}
			}
			select {
			case <-l.Lost():
			case <-time.After(heard):
				n, _ := srv.Do("EXISTS", "evicted").AsInt64()
				t.Fatalf("Lost still open %v after memory filled (lock key exists: %d)", heard, n)
			}
		})
	}
}

// A hint is not a verdict: the holder's own renewals and re-entries, and
// other readers' holds, change the key too; none of them may end a lease.
// A watchdog of 1s renews every 333ms: 3s is 9 renewals, each an
// invalidation of the key held. (With 300ms, a race build on a busy machine
// stalled renewals past the lease: a true loss, not the false one looked
// for.)
func TestNoFalseLoss(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv, leasehold.WithWatchdog(time.Second))
	ctx := context.Background()
	r := mustHold(t)(rlock.New(c, "nofalse").Acquire(ctx))
	again := mustHold(t)(rlock.New(c, "nofalse").Acquire(r.Context())) // a re-entry writes the hash
	lock := rw.New(c, "nofalse:rw")
	var reads []*lease.Lease
	for range 3 {
		reads = append(reads, mustHold(t)(lock.Read().Acquire(ctx)))
	}
	s := semaphore.New(c, "nofalse:sem")
	if _, err := s.TrySetPermits(ctx, 5); err != nil {
		t.Fatal(err)
	}
	permit := mustHold(t)(s.Acquire(ctx))
	others := []*lease.Lease{mustHold(t)(s.Acquire(ctx)), mustHold(t)(s.Weighted(2).Acquire(ctx))}
	all := slices.Concat([]*lease.Lease{r, again, permit}, reads, others)
	deadline := time.After(3 * time.Second)
	for i := 0; ; i++ {
		select {
		case <-deadline:
			for _, l := range all {
				if l.Err() != nil {
					t.Fatalf("%s lost: %v", l.Name(), l.Err())
				}
				if err := l.Release(ctx); err != nil {
					t.Fatalf("release %s: %v", l.Name(), err)
				}
			}
			return
		case <-time.After(50 * time.Millisecond):
		}
		// Other holders come and go on the same keys.
		mustRelease(t, mustHold(t)(lock.Read().Acquire(ctx)))
		mustRelease(t, mustHold(t)(s.Acquire(ctx)))
		for _, l := range all {
			if l.Err() != nil {
				t.Fatalf("round %d: %s lost: %v", i, l.Name(), l.Err())
			}
		}
	}
}

func mustRelease(t *testing.T, l *lease.Lease) {
	t.Helper()
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A RedLock keeps its lease while a majority of its members still hold, and
// reports the loss, at once, when it cannot.
func TestRedLockLostAtOnce(t *testing.T) {
	var srvs []*redistest.Server
	var lockers []lease.Locker
	for range 3 {
		srv := redistest.Start(t)
		srvs = append(srvs, srv)
		lockers = append(lockers, rlock.New(open(t, srv), "red"))
	}
	l := mustHold(t)(quorum.RedLock(lockers...).Acquire(context.Background()))
	srvs[0].Do("DEL", "red")
	select {
	case <-l.Lost():
		t.Fatalf("lost with 2 of 3 members held: %v", l.Err())
	case <-time.After(300 * time.Millisecond):
	}
	srvs[1].Do("DEL", "red")
	select {
	case <-l.Lost():
	case <-time.After(heard):
		t.Fatalf("Lost still open %v after 2 of 3 members were deleted", heard)
	}
	if !errors.Is(l.Err(), lease.ErrLost) {
		t.Fatalf("Err = %v, want ErrLost", l.Err())
	}
}

// Where the server offers no CLIENT TRACKING (here an ACL that refuses it;
// miniredis has none at all; a RESP2 connection gets no invalidations), Open
// and New still make a Client: it says so once, in a warning and in
// Stats().Tracking, and a removal is heard at the next renewal, as before.
// (rueidis' client-side cache needs CLIENT TRACKING itself: Open fails
// without DisableCache there, and New is given a client without the cache.)
func TestLostAtRenewalWithoutTracking(t *testing.T) {
	srv := redistest.Start(t)
	const watchdog = 900 * time.Millisecond     // renewed every 300ms
	denied := locktest.Denied(t, srv, "client") // Redis 6.2 denies no subcommand alone
	resp2 := srv.Option()
	resp2.AlwaysRESP2, resp2.DisableCache = true, true
	for _, tt := range []struct {
		name string
		opt  rueidis.ClientOption
		open func(t testing.TB, opt rueidis.ClientOption, opts ...leasehold.Option) *leasehold.Client
		why  string
	}{
		{"open-nocache, ACL", denied, clientKinds[1].open, "NOPERM"},
		{"new-nocache, ACL", denied, clientKinds[3].open, "NOPERM"},
		{"open, RESP2", resp2, clientKinds[0].open, "RESP2"},
		{"new, RESP2", resp2, clientKinds[2].open, "RESP2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var w warnings
			c := tt.open(t, tt.opt, leasehold.WithWatchdog(watchdog), leasehold.WithObserver(&w))
			if c.Stats().Tracking {
				t.Fatal("Stats().Tracking = true without CLIENT TRACKING")
			}
			got := w.list()
			if len(got) != 1 || !strings.Contains(got[0].Error(), "CLIENT TRACKING") || !strings.Contains(got[0].Error(), tt.why) {
				t.Fatalf("warnings %v, want one naming CLIENT TRACKING and %s", got, tt.why)
			}
			name := "untracked:" + strings.ReplaceAll(tt.name, " ", "")
			l := mustHold(t)(rlock.New(c, name).Acquire(context.Background()))
			srv.Do("DEL", name)
			select {
			case <-l.Lost():
			case <-time.After(watchdog + heard): // the next renewal, 300ms away at most
				t.Fatal("Lost still open after the next renewal")
			}
			if !errors.Is(l.Err(), lease.ErrLost) || !strings.Contains(l.Err().Error(), "renewal") {
				t.Fatalf("Err = %v, want ErrLost from a renewal", l.Err())
			}
			if n := len(w.list()); n != 1 {
				t.Fatalf("%d warnings, want the one at Open", n)
			}
		})
	}
}

// A tracking connection that breaks takes with it what it tracked, and the
// invalidations sent meanwhile: the Client makes it again and reads every
// hold again, so that a removal while it was down is heard, and one after
// it too. Every kind of Client; CLIENT KILL cuts every connection of theirs.
func TestLostAcrossReconnect(t *testing.T) {
	for _, ck := range clientKinds {
		t.Run(ck.name, func(t *testing.T) {
			srv := redistest.Start(t)
			c := ck.open(t, srv.Option())
			ctx := context.Background()
			before := mustHold(t)(rlock.New(c, "reconnect:1").Acquire(ctx))
			after := mustHold(t)(rlock.New(c, "reconnect:2").Acquire(ctx))
			awaitTracked(t, srv, 1)
			reads := func() int64 { calls, _ := commandCalls(t, srv); return calls["hmget"] }
			read := reads()
			// Removed in the transaction that kills the connections: its
			// invalidation goes nowhere.
			rc := srv.Client()
			for _, r := range rc.DoMulti(ctx, rc.B().Multi().Build(), rc.B().Del().Key("reconnect:1").Build(),
				rc.B().Arbitrary("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes").Build(), rc.B().Exec().Build()) {
				if err := r.Error(); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case <-before.Lost():
			case <-time.After(heard):
				t.Fatalf("a removal while the connection was down: Lost still open %v later", heard)
			}
			// Both holds read again, on the new connection.
			locktest.Eventually(t, heard, "the holds read again", func() bool { return reads() >= read+2 })
			srv.Do("DEL", "reconnect:2")
			select {
			case <-after.Lost():
			case <-time.After(heard):
				t.Fatalf("a removal after the reconnection: Lost still open %v later", heard)
			}
			if !errors.Is(after.Err(), lease.ErrLost) {
				t.Fatalf("Err = %v, want ErrLost", after.Err())
			}
		})
	}
}

// commandCalls reads how many times the server has run each command, and
// the µs it spent in them, from INFO commandstats.
func commandCalls(tb testing.TB, srv *redistest.Server) (calls, usec map[string]int64) {
	tb.Helper()
	info, err := srv.Do("INFO", "commandstats").ToString()
	if err != nil {
		tb.Fatal(err)
	}
	calls, usec = map[string]int64{}, map[string]int64{}
	for _, line := range splitLines(info) {
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
		if !ok || name == line {
			continue
		}
		var n, us int64
		if _, err := fmt.Sscanf(rest, "calls=%d,usec=%d", &n, &us); err == nil {
			calls[name], usec[name] = n, us
		}
	}
	return calls, usec
}

// The holds on one key are read together: a change to a read-write lock
// held by five readers of one Client costs it one read, not five, and none
// of them is lost.
func TestOneReadPerKey(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := context.Background()
	lock := rw.New(c, "shared")
	var held []*lease.Lease
	for range 5 {
		held = append(held, mustHold(t)(lock.Read().Acquire(ctx)))
	}
	// Wait until the acquisitions' own reads are done: the count stands
	// still for 100ms.
	reads := func() int64 { calls, _ := commandCalls(t, srv); return calls["hmget"] }
	before := reads()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		n := reads()
		if n == before {
			break
		}
		before = n
	}
	srv.Do("HSET", "shared", "unrelated", "1") // a hint for every reader
	deadline := time.Now().Add(heard)
	for reads() == before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // any further reads
	if n := reads() - before; n != 1 {
		t.Fatalf("%d reads after one change of the key held by 5 readers, want 1", n)
	}
	for _, l := range held {
		if l.Err() != nil {
			t.Fatalf("a reader was lost: %v", l.Err())
		}
		mustRelease(t, l)
	}
}

// BenchmarkGuard is the cost of hearing of losses at once: 10,000 leases
// held by one Client, and a stream of foreign writes to their keys (each an
// invalidation the Client must confirm with a read). One op is one foreign
// write to every held key, pipelined, and the wait until the holder's
// Client has confirmed each. Reported: Redis commands and commandstats µs
// per hint (the confirmations' share), the holder's time per hint. The
// holder's own renewals cost the same per lease per round (each writes the
// key), every third of the watchdog lease.
func BenchmarkGuard(b *testing.B) {
	const leases = 10000
	srv := redistest.Start(b)
	c := locktest.Open(b, srv)
	ctx := context.Background()
	names := make([]string, leases)
	for i := range names {
		names[i] = fmt.Sprint("guarded:", i)
		if _, err := rlock.New(c, names[i]).Acquire(ctx); err != nil {
			b.Fatal(err)
		}
	}
	confirmed := func() int64 {
		calls, _ := commandCalls(b, srv)
		return calls["hmget"]
	}
	for confirmed() < leases { // the first confirmations, which start the tracking
		time.Sleep(10 * time.Millisecond)
	}
	foreign := srv.Client()
	writes := make(rueidis.Commands, leases)
	calls0, usec0 := commandCalls(b, srv)
	b.ResetTimer()
	for range b.N {
		want := confirmed() + leases
		for i, n := range names { // a command is sent once
			writes[i] = foreign.B().Pexpire().Key(n).Milliseconds(30000).Build()
		}
		for _, r := range foreign.DoMulti(ctx, writes...) {
			if err := r.Error(); err != nil {
				b.Fatal(err)
			}
		}
		for confirmed() < want {
			time.Sleep(time.Millisecond)
		}
	}
	b.StopTimer()
	calls1, usec1 := commandCalls(b, srv)
	var cmds, us int64
	for name, n := range calls1 {
		if name == "pexpire" || name == "info" {
			continue
		}
		cmds += n - calls0[name]
		us += usec1[name] - usec0[name]
	}
	hints := float64(b.N * leases)
	b.ReportMetric(float64(cmds)/hints, "cmds/hint")
	b.ReportMetric(float64(us)/hints, "redis-µs/hint")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/hints, "ns/hint")
	if st := c.Stats(); st.Leases != leases {
		b.Fatalf("%d leases held after the writes, want %d: a hint was taken for a loss", st.Leases, leases)
	}
}

// In Redis Cluster the invalidation comes from the node of the key's slot,
// on the connection that read it there: each kind's holder hears of a
// deletion at once, on whichever node its lock lives, on every kind of
// Client (the tracking connections are one per node, found by slot).
func TestClusterLostAtOnce(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	for _, ck := range clientKinds {
		t.Run(ck.name, func(t *testing.T) {
			c := ck.open(t, cl.Option())
			nodes := map[string]bool{}
			for i, k := range holdKinds {
				for j := range 3 { // names over several slots and nodes
					name := fmt.Sprintf("cluster-lost-%s-%d-%d", ck.name, i, j)
					owner := cl.Owner(cl.KeySlot(name))
					tracked := trackedKeys(t, owner)
					h := k.acquire(t, c, name)
					awaitTracked(t, owner, tracked)
					node := owner.Addr()
					nodes[node] = true
					if err := cl.Client().Do(context.Background(), cl.Client().B().Del().Key(h.key).Build()).Error(); err != nil {
						t.Fatal(err)
					}
					select {
					case <-h.lease.Lost():
					case <-time.After(heard):
						t.Fatalf("%s: Lost still open %v after the DEL on node %s", k.name, heard, node)
					}
					if !errors.Is(h.lease.Err(), lease.ErrLost) {
						t.Fatalf("%s: Err = %v, want ErrLost", k.name, h.lease.Err())
					}
				}
			}
			if len(nodes) < 3 {
				t.Fatalf("the locks lived on %d nodes, want all 3", len(nodes))
			}
		})
	}
}

var heardNames atomic.Int64

// BenchmarkLossHeard is the delay from a foreign DEL of a held lock's key
// to its holder's Lost(), per kind of Client, once the guard has read the
// hold (so the invalidation is what tells it). One op is one removal heard;
// reported: the median and the 99th percentile besides the mean (ns/op).
func BenchmarkLossHeard(b *testing.B) {
	srv := redistest.Start(b)
	foreign := srv.Client()
	for _, ck := range clientKinds {
		b.Run(ck.name, func(b *testing.B) {
			c := ck.open(b, srv.Option())
			ctx := context.Background()
			delays := make([]time.Duration, 0, b.N)
			b.StopTimer()
			for range b.N {
				name := fmt.Sprint("heard:", ck.name, ":", heardNames.Add(1)) // never read before
				tracked := trackedKeys(b, srv)
				l, err := rlock.New(c, name).Acquire(ctx)
				if err != nil {
					b.Fatal(err)
				}
				awaitTracked(b, srv, tracked)
				del := foreign.B().Del().Key(name).Build()
				start := time.Now()
				b.StartTimer()
				if err := foreign.Do(ctx, del).Error(); err != nil {
					b.Fatal(err)
				}
				<-l.Lost()
				b.StopTimer()
				delays = append(delays, time.Since(start))
			}
			slices.Sort(delays)
			b.ReportMetric(float64(delays[len(delays)/2].Microseconds()), "µs-p50")
			b.ReportMetric(float64(delays[len(delays)*99/100].Microseconds()), "µs-p99")
		})
	}
}

// When a lock's slot moves to another node (resharding), the guard follows
// it: the MIGRATE that deletes the key on the old node is a hint, whose read
// is sent on (ASK while the slot moves, MOVED once it has), and the hold,
// found on the new node, is tracked there: no false loss, and a removal on
// the new node is heard at once. Every kind of Client.
func TestClusterLostAfterSlotMoves(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	for _, ck := range clientKinds {
		t.Run(ck.name, func(t *testing.T) {
			c := ck.open(t, cl.Option())
			name := "moved:" + ck.name
			slot := cl.KeySlot(name)
			from := cl.Owner(slot)
			var to *redistest.Server
			for _, p := range cl.Primaries() {
				if p != from {
					to = p
					break
				}
			}
			tracked := trackedKeys(t, from)
			l := mustHold(t)(rlock.New(c, name).Acquire(context.Background()))
			awaitTracked(t, from, tracked)
			tracked = trackedKeys(t, to)
			cl.MigrateSlot(slot, to)
			awaitTracked(t, to, tracked) // read again on the new node
			if l.Err() != nil {
				t.Fatalf("lost when its slot moved: %v", l.Err())
			}
			to.Do("DEL", name)
			select {
			case <-l.Lost():
			case <-time.After(heard):
				t.Fatalf("Lost still open %v after the DEL on the slot's new node", heard)
			}
			if !errors.Is(l.Err(), lease.ErrLost) {
				t.Fatalf("Err = %v, want ErrLost", l.Err())
			}
		})
	}
}
