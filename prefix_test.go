package leasehold_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/election"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/quorum"
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/rw"
	"github.com/leasehold/leasehold/semaphore"
)

// A prefix that would move a lock's keys out of their Cluster slot, or
// widen the ACL patterns that confine a service to it, is refused.
func TestKeyPrefixInvalid(t *testing.T) {
	srv := redistest.Start(t)
	for _, p := range []string{"{svc}:", "svc}", "svc*", "sv?", "s[v]c", `s\vc`, "my svc:", "svc\n", "svc\t", "\xff"} {
		_, err := leasehold.New(srv.Client(), leasehold.WithKeyPrefix(p))
		if !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "key prefix") {
			t.Errorf("WithKeyPrefix(%q): %v, want ErrInvalid naming the key prefix", p, err)
		}
	}
	for _, p := range []string{"", "svc:", "billing/", "dépôt:", "a-b_c.d:"} {
		c, err := leasehold.New(srv.Client(), leasehold.WithKeyPrefix(p))
		if err != nil {
			t.Errorf("WithKeyPrefix(%q): %v", p, err)
			continue
		}
		c.Close()
	}
}

// prefixKinds are the lock kinds as Lockers on a name, Multi of two rlocks
// among them; blocker, when set, is the lock whose holder makes locker's
// wait (a writer holds readers back).
var prefixKinds = []prefixKind{
	{"rlock", func(c *leasehold.Client, name string) lease.Locker { return rlock.New(c, name) }, nil},
	{"fairqueue", func(c *leasehold.Client, name string) lease.Locker { return fairqueue.New(c, name) }, nil},
	{"rw read", func(c *leasehold.Client, name string) lease.Locker { return rw.New(c, name).Read() },
		func(c *leasehold.Client, name string) lease.Locker { return rw.New(c, name).Write() }},
	{"rw write", func(c *leasehold.Client, name string) lease.Locker { return rw.New(c, name).Write() }, nil},
	{"semaphore", func(c *leasehold.Client, name string) lease.Locker {
		s := semaphore.New(c, name)
		_, _ = s.TrySetPermits(context.Background(), 1) // the test fails on Acquire if this did
		return s
	}, nil},
	{"election", func(c *leasehold.Client, name string) lease.Locker { return campaigner{election.New(c, name)} }, nil},
	{"multi", func(c *leasehold.Client, name string) lease.Locker {
		return quorum.Multi(rlock.New(c, name+"/a"), rlock.New(c, name+"/b"))
	}, nil},
}

type prefixKind struct {
	name    string
	locker  func(c *leasehold.Client, name string) lease.Locker
	blocker func(c *leasehold.Client, name string) lease.Locker
}

// first is the lock to hold first, for the locker on c to wait for.
func (k prefixKind) first(c *leasehold.Client, name string) lease.Locker {
	if k.blocker != nil {
		return k.blocker(c, name)
	}
	return k.locker(c, name)
}

// campaigner is an Election as a Locker, campaigning with the value "v".
type campaigner struct{ e *election.Election }

func (c campaigner) Acquire(ctx context.Context) (*lease.Lease, error) { return c.e.Campaign(ctx, "v") }
func (c campaigner) TryAcquire(context.Context) (*lease.Lease, error) {
	return nil, errors.New("unused")
}
func (c campaigner) AcquireAsync(context.Context) *lease.Future { panic("unused") }

// handoff takes a's lock, has b wait for it, releases it, and returns b's
// lease once b holds it: the keys, the scripts and the wake-up all work.
func handoff(t *testing.T, ctx context.Context, a, b lease.Locker) *lease.Lease {
	t.Helper()
	ls := locktest.MustAcquire(t, a, ctx)
	type result struct {
		ls  *lease.Lease
		err error
	}
	got := make(chan result, 1)
	go func() {
		l, err := b.Acquire(ctx)
		got <- result{l, err}
	}()
	select {
	case r := <-got:
		t.Fatalf("the second Acquire returned while the first held: %v, %v", r.ls, r.err)
	case <-time.After(100 * time.Millisecond):
	}
	locktest.Release(t, ls)
	r := <-got
	if r.err != nil {
		t.Fatalf("the waiter: %v", r.err)
	}
	return r.ls
}

// With a key prefix, every key and channel of every kind lies under it,
// while leases, events and errors carry the name the caller gave. Clients
// with different prefixes do not share a lock; a Client without the prefix
// shares it under the mapped name, as a Redisson client with a NameMapper
// adding the prefix does.
func TestKeyPrefix(t *testing.T) {
	srv := redistest.Start(t)
	var mu sync.Mutex
	var names []string
	obs := leasehold.WithObserver(lease.ObserverFunc(func(e lease.Event) {
		if e.Name != "" {
			mu.Lock()
			names = append(names, e.Name)
			mu.Unlock()
		}
	}))
	a, b := locktest.Open(t, srv, leasehold.WithKeyPrefix("svc:"), obs), locktest.Open(t, srv, leasehold.WithKeyPrefix("svc:"))
	other, plain := locktest.Open(t, srv, leasehold.WithKeyPrefix("other:")), locktest.Open(t, srv)
	ctx := locktest.Ctx(t, 30*time.Second)
	for _, k := range prefixKinds {
		t.Run(k.name, func(t *testing.T) {
			name := "job-" + k.name
			ls := handoff(t, ctx, k.first(a, name), k.locker(b, name))
			if !strings.Contains(ls.Name(), name) || strings.Contains(ls.Name(), "svc:") {
				t.Errorf("Lease.Name() = %q: want the caller's name", ls.Name())
			}
			if k.name != "rw read" && k.name != "semaphore" {
				// One holder at a time: another prefix is another lock, the
				// mapped name without a prefix the same one.
				ols := locktest.MustAcquire(t, k.locker(other, name), ctx)
				locktest.Release(t, ols)
				if k.name != "election" {
					_, err := k.locker(plain, "svc:"+name).TryAcquire(ctx)
					locktest.WantErr(t, err, lease.ErrNotAcquired)
				}
			}
			var outside []string
			keys, err := srv.Do("KEYS", "*").AsStrSlice()
			if err != nil {
				t.Fatal(err)
			}
			for _, key := range keys {
				if !strings.HasPrefix(key, "svc:") && !strings.Contains(key, "{svc:") &&
					!strings.HasPrefix(key, "other:") && !strings.Contains(key, "{other:") {
					outside = append(outside, key)
				}
			}
			if len(outside) > 0 {
				t.Errorf("keys outside the prefix while held: %v (all: %v)", outside, keys)
			}
			locktest.Release(t, ls)
		})
	}
	mu.Lock()
	seen := append([]string(nil), names...)
	mu.Unlock()
	for _, n := range seen {
		if strings.Contains(n, "svc:") {
			t.Fatalf("an event names %q: want the caller's name", n)
		}
	}
	if len(seen) == 0 {
		t.Fatal("no events observed")
	}
	// The inspection calls read the mapped name.
	l := rlock.New(a, "inspected")
	ls := locktest.MustAcquire(t, l, ctx)
	if ok, err := l.IsLocked(ctx); !ok || err != nil {
		t.Errorf("IsLocked = %v, %v; want true", ok, err)
	}
	if d, err := l.RemainTTL(ctx); d <= 0 || err != nil {
		t.Errorf("RemainTTL = %v, %v; want the lease", d, err)
	}
	if n, _ := srv.Do("EXISTS", "svc:inspected").AsInt64(); n != 1 {
		t.Error("the lock is not at svc:inspected")
	}
	locktest.Release(t, ls)
}

// safetyACL is the ACL of docs/safety.md that confines a service to its
// key prefix, for prefix, as the arguments of one command.
func safetyACL(t *testing.T, prefix, password string) []string {
	t.Helper()
	src, err := os.ReadFile("docs/safety.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(src), "\nACL SETUSER ")
	if !ok {
		t.Fatal("docs/safety.md: no ACL SETUSER line")
	}
	var cmd strings.Builder
	cmd.WriteString("ACL SETUSER ")
	for line := range strings.Lines(rest) {
		line = strings.TrimRight(line, "\n")
		cont := strings.HasSuffix(line, `\`)
		cmd.WriteString(strings.TrimSuffix(line, `\`) + " ")
		if !cont {
			break
		}
	}
	s := strings.NewReplacer("PREFIX", prefix, "PASSWORD", password).Replace(cmd.String())
	return strings.Fields(s)
}

// Every kind works as an ACL user holding only the keys and channels under
// its prefix and the commands docs/safety.md lists, with no warning (the
// PUBLISH probe at Open and CLIENT TRACKING pass): the ACL is the one the
// docs give, and it is enough. A lock outside the prefix is refused at
// once, with an error naming the lock and wrapping the NOPERM reply.
func TestKeyPrefixACL(t *testing.T) {
	srv := redistest.Start(t)
	rules := safetyACL(t, "svc:", "pw")
	if err := srv.Do(rules...).Error(); err != nil {
		t.Fatalf("%v: %v", rules, err)
	}
	// As the page says, for the servers that have them (the ACL of the
	// others refuses the rule).
	_ = srv.Do("ACL", "SETUSER", rules[2], "+client|setinfo").Error()
	_ = srv.Do("ACL", "SETUSER", rules[2], "+ssubscribe", "+sunsubscribe", "+spublish", "+pubsub|shardnumsub").Error()
	opt := srv.Option()
	opt.Username, opt.Password = rules[2], "pw"
	var w warnings
	a := locktest.OpenAt(t, opt, leasehold.WithKeyPrefix("svc:"), leasehold.WithObserver(&w))
	b := locktest.OpenAt(t, opt, leasehold.WithKeyPrefix("svc:"), leasehold.WithObserver(&w))
	if !a.Stats().Tracking {
		t.Error("Stats().Tracking = false under the prefix's ACL")
	}
	ctx := locktest.Ctx(t, 30*time.Second)
	for _, k := range prefixKinds {
		t.Run(k.name, func(t *testing.T) {
			locktest.Release(t, handoff(t, ctx, k.first(a, k.name), k.locker(b, k.name)))
		})
	}
	t.Run("inspection", func(t *testing.T) {
		l := rlock.New(a, "inspected")
		ls := locktest.MustAcquire(t, l, ctx)
		if ok, err := l.IsLocked(ctx); !ok || err != nil {
			t.Errorf("IsLocked = %v, %v", ok, err)
		}
		if _, err := l.RemainTTL(ctx); err != nil {
			t.Errorf("RemainTTL: %v", err)
		}
		if ok, err := rlock.New(b, "inspected").ForceRelease(ctx); !ok || err != nil {
			t.Errorf("ForceRelease = %v, %v", ok, err)
		}
		<-ls.Lost()
		s := semaphore.New(a, "permits")
		if err := s.AddPermits(ctx, 3); err != nil {
			t.Error(err)
		}
		if n, err := s.AvailablePermits(ctx); n != 3 || err != nil {
			t.Errorf("AvailablePermits = %v, %v; want 3", n, err)
		}
		e := election.New(a, "leading")
		ls = locktest.MustAcquire(t, campaigner{e}, ctx)
		if err := e.Proclaim(ctx, "w"); err != nil {
			t.Error(err)
		}
		if l, err := election.New(b, "leading").Leader(ctx); l.Value != "w" || err != nil {
			t.Errorf("Leader = %+v, %v", l, err)
		}
		octx, stop := context.WithCancel(ctx)
		defer stop()
		seen := election.New(b, "leading").Observe(octx)
		if l := <-seen; l.Value != "w" {
			t.Errorf("Observe: %+v first; want the leader", l)
		}
		locktest.Release(t, ls)
		if l := <-seen; l.Value != "" {
			t.Errorf("Observe: %+v after the resignation; want nobody", l)
		}
		stop()
		for range seen {
		}
	})
	if ws := w.list(); len(ws) != 0 {
		t.Errorf("warnings under the prefix's ACL: %v", ws)
	}
	if log, err := srv.Do("ACL", "LOG").ToArray(); err != nil || len(log) != 0 {
		var refused []string
		for _, e := range log {
			m, _ := e.AsStrMap()
			refused = append(refused, m["reason"]+" "+m["object"])
		}
		t.Errorf("ACL LOG under the prefix: %d refusals (%v), %v; want none", len(log), refused, err)
	}
	for _, prefix := range []string{"", "other:"} {
		// Its PUBLISH probe at Open is refused too: it warns of it.
		c := locktest.OpenAt(t, opt, leasehold.WithKeyPrefix(prefix), leasehold.WithObserver(lease.ObserverFunc(func(lease.Event) {})))
		start := time.Now()
		_, err := rlock.New(c, "cleanup").Acquire(ctx)
		var le *lease.Error
		if !errors.As(err, &le) || le.Name != "cleanup" || !errors.Is(err, lease.ErrRedis) || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("prefix %q: Acquire outside the ACL: %v; want a *lease.Error on \"cleanup\" wrapping ErrRedis and NOPERM", prefix, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("prefix %q: the refusal took %v: it was retried", prefix, d)
		}
	}
}
