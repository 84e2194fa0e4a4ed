package rw_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rw"
	"github.com/leasehold/leasehold/script"
)

// Readers on several Clients hold at once, in Redisson's layout; a writer
// waits for the last of them and is woken by its release; readers wait while
// the writer holds and are all let in by its release.
func TestReadersShareWriterWaits(t *testing.T) {
	srv := redistest.Start(t)
	cs := []*leasehold.Client{open(t, srv), open(t, srv), open(t, srv)}
	wc := open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	const name = "shared"

	var reads []*lease.Lease
	for _, c := range cs {
		reads = append(reads, mustAcquire(t, rw.New(c, name).Read(), ctx))
	}
	if m := hash(t, srv, name); m["mode"] != "read" || len(m) != 1+len(cs) {
		t.Fatalf("lock hash with %d readers: %v", len(cs), m)
	}
	for _, c := range cs {
		owner := ownerOf(t, srv, name, c)
		if n := hash(t, srv, name)[owner]; n != "1" {
			t.Fatalf("reader %s holds %s reads, want 1", owner, n)
		}
		key := script.KeysOf(name).ReadHolds(owner) + ":1"
		if key != "{shared}:"+owner+":rwlock_timeout:1" {
			t.Fatalf("hold key %q", key)
		}
		if ttl := pttl(t, srv, key); ttl <= 0 || ttl > 30*time.Second {
			t.Fatalf("hold key %s PTTL %v", key, ttl)
		}
	}

	w := rw.New(wc, name).Write()
	_, err := w.TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	f := w.AcquireAsync(ctx)
	eventually(t, 5*time.Second, "writer waiting", func() bool { return waiters(wc) == 1 })
	for _, r := range reads[:len(reads)-1] {
		release(t, r)
	}
	// The last reader still holds: the lock is still in read mode, whatever
	// the writer's wake-ups made it try.
	if m := hash(t, srv, name); m["mode"] != "read" || isDone(f) {
		t.Fatalf("writer got in past a reader: %v", m)
	}
	released := time.Now()
	release(t, reads[len(reads)-1])
	wl := result(t, f, woken)
	t.Logf("writer in %v after the last reader left", time.Since(released))
	if _, writer := owners(t, srv, name); hash(t, srv, name)["mode"] != "write" || writer == "" || hash(t, srv, name)[writer] != "1" {
		t.Fatalf("lock hash under the writer: %v", hash(t, srv, name))
	}

	// Readers wait while the writer holds, and its release lets them all in.
	_, err = rw.New(cs[0], name).Read().TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	var fs []*lease.Future
	for _, c := range cs {
		fs = append(fs, rw.New(c, name).Read().AcquireAsync(ctx))
	}
	for _, c := range cs {
		eventually(t, 5*time.Second, "readers waiting", func() bool { return waiters(c) == 1 })
	}
	release(t, wl)
	for _, f := range fs {
		defer release(t, result(t, f, woken))
	}
	if m := hash(t, srv, name); m["mode"] != "read" || len(m) != 1+len(cs) {
		t.Fatalf("lock hash after the writer let %d readers in: %v", len(cs), m)
	}
}

// Many goroutines over several Clients mixing reads and writes, with and
// without writer preference: a writer is always alone, readers never meet a
// writer, writers' fencing tokens rise, and every goroutine gets through.
func TestReadWriteExclusionHammer(t *testing.T) {
	for _, prefer := range []bool{false, true} {
		t.Run("writer preference "+strconv.FormatBool(prefer), func(t *testing.T) {
			var opts []leasehold.LockOption
			if prefer {
				opts = append(opts, leasehold.WithWriterPreference())
			}
			hammer(t, opts)
		})
	}
}

func hammer(t *testing.T, opts []leasehold.LockOption) {
	srv := redistest.Start(t)
	const clients, workers, rounds = 3, 8, 20
	var readers, writers, maxReaders atomic.Int32
	var mu sync.Mutex
	var lastWrite uint64
	var wg sync.WaitGroup
	errs := make(chan error, clients*workers*rounds)
	for i := 0; i < clients; i++ {
		c := open(t, srv)
		for j := 0; j < workers; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l := rw.New(c, "hammer", opts...)
				for r := 0; r < rounds; r++ {
					// A generous wait: 480 acquisitions queue on two
					// loaded cores.
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					write := (j+r)%3 == 0
					locker := l.Read()
					if write {
						locker = l.Write()
					}
					ls, err := locker.Acquire(ctx)
					cancel()
					if err != nil {
						errs <- err
						return
					}
					if write {
						if n := writers.Add(1); n != 1 || readers.Load() != 0 {
							errs <- fmt.Errorf("writer with %d writers and %d readers", n, readers.Load())
						}
						mu.Lock()
						if ls.Token() <= lastWrite {
							errs <- fmt.Errorf("write token %d after %d", ls.Token(), lastWrite)
						}
						lastWrite = ls.Token()
						mu.Unlock()
						time.Sleep(time.Millisecond) // give a wrong reader time to show up
						writers.Add(-1)
					} else {
						n := readers.Add(1)
						if writers.Load() != 0 {
							errs <- fmt.Errorf("reader alongside a writer")
						}
						for m := maxReaders.Load(); n > m && !maxReaders.CompareAndSwap(m, n); m = maxReaders.Load() {
						}
						time.Sleep(time.Millisecond)
						readers.Add(-1)
					}
					if err := ls.Release(context.Background()); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("at most %d readers at once", maxReaders.Load())
	if exists(t, srv, "hammer") {
		t.Fatalf("lock left behind: %v", hash(t, srv, "hammer"))
	}
}

// Key derivation as Redisson's suffixName: {NAME}:OWNER:rwlock_timeout:N, or
// NAME:OWNER:... when NAME already has a hash tag; either way another
// reader's release finds the hold alive and keeps the lock.
func TestKeyLayout(t *testing.T) {
	srv := redistest.Start(t)
	c, other := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	for _, tt := range []struct{ name, prefix string }{
		{"plain", "{plain}"},
		{"{tag}rw", "{tag}rw"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rl := mustAcquire(t, rw.New(c, tt.name).Read(), ctx)
			owner := ownerOf(t, srv, tt.name, c)
			key := tt.prefix + ":" + owner + ":rwlock_timeout:1"
			if got := script.KeysOf(tt.name).ReadHolds(owner) + ":1"; got != key || !exists(t, srv, key) {
				t.Fatalf("hold key %q (exists %v), want %q", got, exists(t, srv, got), key)
			}
			release(t, mustAcquire(t, rw.New(other, tt.name).Read(), ctx))
			if !exists(t, srv, tt.name) || isLost(rl) {
				t.Fatalf("another reader's release dropped the lock: %v", hash(t, srv, tt.name))
			}
			release(t, rl)
		})
	}
}

func TestReentrancy(t *testing.T) {
	for _, kind := range []string{"read", "write"} {
		t.Run(kind, func(t *testing.T) {
			srv := redistest.Start(t)
			c, other := open(t, srv), open(t, srv)
			ctx := ctxTimeout(t, 10*time.Second)
			pick := func(l *rw.Lock) lease.Locker {
				if kind == "read" {
					return l.Read()
				}
				return l.Write()
			}
			outer := mustAcquire(t, pick(rw.New(c, "re")), ctx)
			inner := mustAcquire(t, pick(rw.New(c, "re")), outer.Context())
			if inner.HoldCount() != 2 || inner.Token() != outer.Token() {
				t.Fatalf("inner HoldCount %d token %d (outer %d)", inner.HoldCount(), inner.Token(), outer.Token())
			}
			rs, writer := owners(t, srv, "re")
			field := writer
			if kind == "read" {
				if len(rs) != 1 {
					t.Fatalf("reentrant read made %d owners: %v", len(rs), rs)
				}
				field = rs[0]
				for n := 1; n <= 2; n++ {
					if !exists(t, srv, script.KeysOf("re").ReadHolds(field)+":"+strconv.Itoa(n)) {
						t.Fatalf("read hold key %d missing", n)
					}
				}
			}
			if n := hash(t, srv, "re")[field]; n != "2" {
				t.Fatalf("hold count %s, want 2", n)
			}
			// Another Client's writer is excluded either way.
			_, err := rw.New(other, "re").Write().TryAcquire(ctx)
			wantErr(t, err, lease.ErrNotAcquired)

			release(t, inner)
			if n := hash(t, srv, "re")[field]; n != "1" || isLost(outer) {
				t.Fatalf("after the inner release: count %s, outer lost %v", n, isLost(outer))
			}
			if kind == "read" && exists(t, srv, script.KeysOf("re").ReadHolds(field)+":2") {
				t.Fatal("released read hold's key left behind")
			}
			release(t, outer)
			if exists(t, srv, "re") {
				t.Fatalf("lock left after both releases: %v", hash(t, srv, "re"))
			}
		})
	}
}

// Downgrade: take the write lock, read under its lease, release the write
// lock: still reading, and others may now read but not write.
func TestDowngrade(t *testing.T) {
	srv := redistest.Start(t)
	c, other := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	l := rw.New(c, "down")
	wl := mustAcquire(t, l.Write(), ctx)
	rl, err := l.Read().TryAcquire(wl.Context())
	if err != nil {
		t.Fatalf("read under the write lease: %v", err)
	}
	if rl.Token() <= wl.Token() {
		t.Fatalf("read token %d not above write token %d", rl.Token(), wl.Token())
	}
	if m := hash(t, srv, "down"); m["mode"] != "write" || len(m) != 3 {
		t.Fatalf("lock hash with a read under the write: %v", m)
	}
	_, err = rw.New(other, "down").Read().TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	// The read lease's context carries the write lease too: a write there
	// is reentrant, not an upgrade.
	wl2 := mustTry(t, l.Write(), rl.Context())
	if wl2.HoldCount() != 2 {
		t.Fatalf("reentrant write HoldCount %d", wl2.HoldCount())
	}
	release(t, wl2)

	release(t, wl)
	if isLost(rl) || rl.Context().Err() != nil {
		t.Fatal("releasing the write lease ended the read under it")
	}
	if m := hash(t, srv, "down"); m["mode"] != "read" || len(m) != 2 {
		t.Fatalf("lock hash after the downgrade: %v", m)
	}
	if ttl := pttl(t, srv, "down"); ttl <= 0 {
		t.Fatalf("lock TTL after the downgrade: %v", ttl)
	}
	_, err = rw.New(other, "down").Write().TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	orl := mustTry(t, rw.New(other, "down").Read(), ctx)
	release(t, rl)
	release(t, orl)
	if exists(t, srv, "down") {
		t.Fatalf("lock left: %v", hash(t, srv, "down"))
	}
}

// Siblings: two reads taken under the same write lease are holds of their
// own; releasing one leaves the other held. (Pins down a shared owner field,
// where the first hold's final release would give up both.)
func TestReadsUnderOneWriteAreSeparate(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	l := rw.New(c, "siblings")
	wl := mustAcquire(t, l.Write(), ctx)
	r1 := mustAcquire(t, l.Read(), wl.Context())
	r2 := mustAcquire(t, l.Read(), wl.Context())
	release(t, wl)
	release(t, r1)
	if rs, _ := owners(t, srv, "siblings"); len(rs) != 1 || isLost(r2) {
		t.Fatalf("after releasing one sibling read: readers %v, other lost %v", rs, isLost(r2))
	}
	release(t, r2)
	if exists(t, srv, "siblings") {
		t.Fatalf("lock left: %v", hash(t, srv, "siblings"))
	}
}

// Upgrade is refused at once with ErrUpgrade, whatever the other readers do,
// rather than waiting for the caller's own read for ever.
func TestUpgradeRefused(t *testing.T) {
	srv := redistest.Start(t)
	c, other := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	l := rw.New(c, "up")
	rl := mustAcquire(t, l.Read(), ctx)
	for _, others := range []bool{false, true} {
		t.Run("other readers "+strconv.FormatBool(others), func(t *testing.T) {
			if others {
				orl := mustAcquire(t, rw.New(other, "up").Read(), ctx)
				defer release(t, orl)
			}
			start := time.Now()
			_, err := l.Write().Acquire(rl.Context())
			wantErr(t, err, rw.ErrUpgrade)
			_, err = l.Write().TryAcquire(rl.Context())
			wantErr(t, err, rw.ErrUpgrade)
			_, err = l.Write().AcquireAsync(rl.Context()).Result()
			wantErr(t, err, rw.ErrUpgrade)
			if el := time.Since(start); el > time.Second {
				t.Fatalf("upgrade refused after %v", el)
			}
			if _, writer := owners(t, srv, "up"); writer != "" {
				t.Fatalf("refused upgrade left a writer: %v", hash(t, srv, "up"))
			}
		})
	}
	// Under any other context a write waits like every writer: here for our
	// own read, so only the deadline ends it.
	wctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := l.Write().Acquire(wctx)
	wantErr(t, err, context.DeadlineExceeded)
	release(t, rl)
}

// Release of a lease no longer held returns ErrNotHeld, for reads and writes.
func TestReleaseNotHeld(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := ctxTimeout(t, 20*time.Second)
	const short = 200 * time.Millisecond
	tests := []struct {
		name  string
		write bool
		opts  []leasehold.LockOption
		end   func(t *testing.T, l *rw.Lock, ls *lease.Lease)
	}{
		{"read released twice", false, nil, func(t *testing.T, _ *rw.Lock, ls *lease.Lease) { release(t, ls) }},
		{"write released twice", true, nil, func(t *testing.T, _ *rw.Lock, ls *lease.Lease) { release(t, ls) }},
		{"read after ForceRelease", false, nil, forceRelease},
		{"write after ForceRelease", true, nil, forceRelease},
		{"fixed read after expiry", false, []leasehold.LockOption{leasehold.WithLeaseTime(short)}, waitLost},
		{"fixed write after expiry", true, []leasehold.LockOption{leasehold.WithLeaseTime(short)}, waitLost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := rw.New(c, "nh-"+tt.name, tt.opts...)
			locker := l.Read()
			if tt.write {
				locker = l.Write()
			}
			ls := mustAcquire(t, locker, ctx)
			tt.end(t, l, ls)
			wantErr(t, ls.Release(ctx), lease.ErrNotHeld)
		})
	}
}

func forceRelease(t *testing.T, l *rw.Lock, _ *lease.Lease) {
	t.Helper()
	if ok, err := l.ForceRelease(context.Background()); err != nil || !ok {
		t.Fatalf("ForceRelease = %v, %v", ok, err)
	}
}

func waitLost(t *testing.T, _ *rw.Lock, ls *lease.Lease) {
	t.Helper()
	select {
	case <-ls.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("fixed lease never reported lost")
	}
	wantErr(t, ls.Err(), lease.ErrLost)
}

func TestInspection(t *testing.T) {
	srv := redistest.Start(t)
	c, other := open(t, srv), open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	l := rw.New(c, "inspected")
	if ok, err := l.IsLocked(ctx); err != nil || ok {
		t.Fatalf("IsLocked on a free lock = %v, %v", ok, err)
	}
	if ttl, err := l.RemainTTL(ctx); err != nil || ttl != 0 {
		t.Fatalf("RemainTTL on a free lock = %v, %v", ttl, err)
	}
	rl := mustAcquire(t, rw.New(other, "inspected").Read(), ctx)
	eventually(t, 2*time.Second, "IsLocked true", func() bool {
		ok, err := l.IsLocked(ctx)
		return err == nil && ok
	})
	if ttl, err := l.RemainTTL(ctx); err != nil || ttl <= 0 {
		t.Fatalf("RemainTTL on a held lock = %v, %v", ttl, err)
	}
	// ForceRelease wakes a waiting writer at once.
	f := l.Write().AcquireAsync(ctx)
	eventually(t, 5*time.Second, "writer waiting", func() bool { return waiters(c) == 1 })
	if ok, err := l.ForceRelease(ctx); err != nil || !ok {
		t.Fatalf("ForceRelease = %v, %v", ok, err)
	}
	release(t, result(t, f, woken))
	wantErr(t, rl.Release(ctx), lease.ErrNotHeld)
}
