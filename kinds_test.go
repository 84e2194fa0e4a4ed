package leasehold_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/rw"
	"github.com/leasehold/leasehold/semaphore"
)

// The table of kinds, lua.Kinds, is what every part reads of a kind: a
// lease of each kind is observed under its row's name, every row is a kind
// users can make (its package exists, and the suite's holdKinds take a lease
// of it), and the lists users read (the observer's Event.Lock, otel's
// lock.kind attribute) name exactly the table's kinds. Adding a kind fails
// here until each of them knows it (docs/architecture.md, "Adding a kind").
func TestKindsTable(t *testing.T) {
	srv := redistest.Start(t)
	var mu sync.Mutex
	seen := map[string]bool{}
	c := locktest.Open(t, srv, leasehold.WithObserver(lease.ObserverFunc(func(e lease.Event) {
		if e.Kind == lease.Acquired {
			mu.Lock()
			seen[e.Lock] = true
			mu.Unlock()
		}
	})))
	for i, k := range holdKinds {
		h := k.acquire(t, c, "kinds-"+strconv.Itoa(i))
		locktest.Release(t, h.lease)
	}
	var names []string
	for _, k := range lua.Kinds {
		names = append(names, k.Name)
		if !seen[k.Name] {
			t.Errorf("no lease of kind %q was observed: holdKinds (lost_test.go) lacks it, or it reports another name", k.Name)
		}
		if _, err := os.Stat(k.Package); err != nil {
			t.Errorf("kind %q: no package %s/", k.Name, k.Package)
		}
	}
	for name := range seen {
		if !slices.Contains(names, name) {
			t.Errorf("a lease was observed as %q, which is not in lua.Kinds", name)
		}
	}
	for _, doc := range []struct{ file, from, to string }{
		{"lease/observer.go", "// Lock is the kind of lock:", "Lock  string"},
		{"docs/otel.md", "`leasehold.lock.kind` (the event's `Lock`:", ")"},
	} {
		listed := quotedKinds(t, doc.file, doc.from, doc.to)
		if !slices.Equal(listed, names) {
			t.Errorf("%s lists the kinds %v; lua.Kinds has %v", doc.file, listed, names)
		}
	}
}

// quotedKinds returns the kinds named in file between the first from and
// the to after it, in order: words quoted with " or ` or set apart by commas.
func quotedKinds(t *testing.T, file, from, to string) []string {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(src), from)
	if !ok {
		t.Fatalf("%s: no %q", file, from)
	}
	list, _, _ := strings.Cut(rest, to)
	var kinds []string
	for _, f := range strings.FieldsFunc(list, func(r rune) bool { return strings.ContainsRune(" ,\"`\n/():", r) }) {
		for _, k := range lua.Kinds {
			if f == k.Name {
				kinds = append(kinds, f)
			}
		}
	}
	return kinds
}

// Two kinds on one name (docs/lease.md, "Two kinds on one name"): a lock
// of one kind on a name another kind holds either waits, writing nothing
// into the holder's keys and leaving no key without an expiry once it gives
// up, or, where the layouts clash (a semaphore's string against the others'
// hash), fails at once with a *lease.Error that names the lock, wraps
// lease.ErrRedis and Redis' reply, and says what WRONGTYPE means here
// rather than the script's SHA and line.
func TestTwoKindsOnOneName(t *testing.T) {
	srv := redistest.Start(t)
	c := locktest.Open(t, srv)
	ctx := locktest.Ctx(t, 2*time.Minute)
	waiters := []struct {
		name string
		new  func(name string) lease.Locker
	}{
		{"rlock", func(name string) lease.Locker { return rlock.New(c, name) }},
		{"fair", func(name string) lease.Locker { return fairqueue.New(c, name) }},
		{"rw read", func(name string) lease.Locker { return rw.New(c, name).Read() }},
		{"rw write", func(name string) lease.Locker { return rw.New(c, name).Write() }},
		{"semaphore", func(name string) lease.Locker { return semaphore.New(c, name) }},
		{"election", func(name string) lease.Locker { return campaign{election.New(c, name)} }},
	}
	for _, h := range holdKinds {
		for _, w := range waiters {
			if w.name == h.name {
				continue
			}
			t.Run(h.name+" held/"+w.name, func(t *testing.T) {
				srv.Do("FLUSHALL") // the last pair's release latches
				name := strings.ReplaceAll("two-"+h.name+"-"+w.name, " ", "-")
				held := h.acquire(t, c, name)
				defer locktest.Release(t, held.lease)
				before := locktest.Snapshot(t, srv)
				clash := (h.name == "semaphore") != (w.name == "semaphore")
				wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				defer cancel()
				ls, err := w.new(name).Acquire(wctx)
				if ls != nil {
					t.Fatalf("%s acquired a name the %s holds", w.name, h.name)
				}
				if !clash {
					locktest.WantErr(t, err, context.DeadlineExceeded)
					// A fair waiter's place goes within a round trip of its
					// Acquire's return: 2s for a loaded machine.
					locktest.Eventually(t, 2*time.Second, "the waiter's traces gone", func() bool {
						return locktest.Snapshot(t, srv) == before
					})
					return
				}
				var le *lease.Error
				var re *rueidis.RedisError
				msg := fmt.Sprint(err)
				switch {
				case !errors.As(err, &le) || le.Name != name || !errors.Is(err, lease.ErrRedis) || !errors.As(err, &re):
					t.Errorf("%v: want a *lease.Error on %q wrapping lease.ErrRedis and Redis' reply", err, name)
				case !strings.Contains(msg, "WRONGTYPE") || !strings.Contains(msg, "another kind of lock"):
					t.Errorf("%q does not say that another kind of lock may hold the name", msg)
				case strings.Contains(msg, "script") || strings.Contains(msg, "@user_script"):
					t.Errorf("%q speaks of the script", msg)
				}
				if after := locktest.Snapshot(t, srv); after != before {
					t.Fatalf("the refused attempt wrote:\nbefore %s\nafter  %s", before, after)
				}
			})
		}
	}
}

// campaign is an election's Campaign as a lease.Locker.
type campaign struct{ e *election.Election }

func (c campaign) Acquire(ctx context.Context) (*lease.Lease, error) { return c.e.Campaign(ctx, "v") }
func (c campaign) TryAcquire(context.Context) (*lease.Lease, error)  { panic("not used") }
func (c campaign) AcquireAsync(context.Context) *lease.Future        { panic("not used") }
