package fairqueue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/election"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/rw"
	"github.com/leasehold/leasehold/script"
)

// Pins a fair lock used by mistake on a name another kind holds: its
// waiter, on a Client closed while it waited (a process that exits), kept
// its place, and since no fair lock's script ran on the name again, the
// queue and timeouts stayed in Redis with no expiry. Now, whatever kind
// holds the name, every key of the name has an expiry at all times, and the
// queue and timeouts are gone within the queue timeout while the holder
// still holds.
func TestWaiterOnAnotherKindLeavesNoKey(t *testing.T) {
	const qt = time.Second
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := ctxTimeout(t, time.Minute)
	holders := []struct {
		kind string
		hold func(name string) lease.Locker
	}{
		{"rlock", func(name string) lease.Locker { return rlock.New(c, name) }},
		{"rw write", func(name string) lease.Locker { return rw.New(c, name).Write() }},
		{"rw read", func(name string) lease.Locker { return rw.New(c, name).Read() }},
		{"election", func(name string) lease.Locker { return campaign{election.New(c, name)} }},
		{"fair", func(name string) lease.Locker { return fairqueue.New(c, name) }},
	}
	for _, h := range holders {
		t.Run(h.kind, func(t *testing.T) {
			name := "mixed-" + strings.ReplaceAll(h.kind, " ", "-")
			held := mustAcquire(t, h.hold(name), ctx)
			defer release(t, held)
			gone, err := leasehold.Open(srv.Option())
			if err != nil {
				t.Fatal(err)
			}
			defer gone.Close()
			waiter := goAcquire(fairqueue.New(gone, name, leasehold.WithQueueTimeout(qt)), ctx)
			queued(t, srv, name, 1)
			gone.Close()
			wantErr(t, (<-waiter).err, lease.ErrClosed)
			k := script.KeysOf(name)
			// Bound: the queue timeout, plus 5s for a loaded machine.
			eventually(t, qt+5*time.Second, "the queue and timeouts gone", func() bool {
				for _, key := range keysOf(t, srv, name) {
					if ttl, _ := srv.Do("PTTL", key).AsInt64(); ttl == -1 {
						t.Fatalf("%s has no expiry", key)
					}
				}
				n, err := srv.Do("EXISTS", k.FairQueue, k.FairTimeout).AsInt64()
				return err == nil && n == 0
			})
			if err := held.Err(); err != nil {
				t.Fatalf("the %s holder lost its lease: %v", h.kind, err)
			}
		})
	}
}

// A Redisson waiter's deadline outlasts a leasehold waiter's queue timeout
// (Redisson stacks each waiter's deadline on the one before). The queue a
// leasehold waiter joins expires at the last deadline in it, not at its own:
// the Redisson waiter keeps its place.
func TestQueueExpiresAtLastDeadline(t *testing.T) {
	srv := redistest.Start(t)
	java := srv.Client()
	c, w := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 30*time.Second)
	k := script.KeysOf("stacked")
	held := mustAcquire(t, fairqueue.New(c, "stacked"), ctx)
	defer release(t, held)
	if javaFairLock(t, java, "stacked") {
		t.Fatal("Redisson took a held lock")
	}
	// Redisson's deadline: the holder's lease (30s) and its wait time (5s) ahead.
	deadline, err := srv.Do("ZSCORE", k.FairTimeout, javaFairOwner).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	if ttl, _ := srv.Do("PTTL", k.FairQueue).AsInt64(); ttl != -1 {
		t.Fatalf("Redisson's queue has an expiry (%dms) before any leasehold waiter", ttl)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	waiter := goAcquire(fairqueue.New(w, "stacked", leasehold.WithQueueTimeout(time.Second)), wctx)
	queued(t, srv, "stacked", 2)
	for _, key := range []string{k.FairQueue, k.FairTimeout} {
		ttl, err := srv.Do("PTTL", key).AsInt64()
		// The TTL is read after the deadline was: it can only be shorter
		// than the deadline's distance by the time in between (a second,
		// for a loaded machine).
		if want := deadline - serverMs(t, srv) - 1000; err != nil || ttl < want {
			t.Fatalf("%s: PTTL %d (%v), want at least %d: the queue expires before Redisson's waiter's deadline", key, ttl, err, want)
		}
	}
	cancel()
	wantErr(t, (<-waiter).err, context.Canceled)
	if q := queued(t, srv, "stacked", 1); q[0] != javaFairOwner {
		t.Fatalf("queue %v, want Redisson's waiter alone", q)
	}
}

// keysOf is every key of the lock name in srv: the name and its derived keys.
func keysOf(t *testing.T, srv *redistest.Server, name string) []string {
	t.Helper()
	keys, err := srv.Do("KEYS", "*{"+name+"}*").AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := srv.Do("EXISTS", name).AsInt64(); n == 1 {
		keys = append(keys, name)
	}
	return keys
}

// campaign is an election's Campaign as a lease.Locker, for holding.
type campaign struct{ e *election.Election }

func (c campaign) Acquire(ctx context.Context) (*lease.Lease, error) {
	return c.e.Campaign(ctx, "here")
}
func (c campaign) TryAcquire(context.Context) (*lease.Lease, error) { panic("not used") }
func (c campaign) AcquireAsync(context.Context) *lease.Future       { panic("not used") }
