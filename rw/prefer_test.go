package rw_test

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rw"
	"github.com/leasehold/leasehold/script"
)

func announced(t *testing.T, srv *redistest.Server, name string) int64 {
	t.Helper()
	n, err := srv.Do("ZCARD", script.KeysOf(name).Writers).AsInt64()
	if err != nil {
		t.Fatalf("ZCARD: %v", err)
	}
	return n
}

// The policy, with and without writer preference: while a writer waits for a
// reader, may a new reader come in? Without preference (Redisson's policy)
// yes; with it no, except a reader that already holds, through its lease's
// context. Either way the writer gets the lock when the reader leaves, and
// the held-back reader when the writer leaves.
func TestWriterPreference(t *testing.T) {
	for _, prefer := range []bool{false, true} {
		name := "no preference"
		var opts []leasehold.LockOption
		if prefer {
			name = "writer preference"
			opts = append(opts, leasehold.WithWriterPreference())
		}
		t.Run(name, func(t *testing.T) {
			srv := redistest.Start(t)
			rc, wc, nc := open(t, srv), open(t, srv), open(t, srv)
			ctx := ctxTimeout(t, 20*time.Second)
			first := mustAcquire(t, rw.New(rc, "pref", opts...).Read(), ctx)
			f := rw.New(wc, "pref", opts...).Write().AcquireAsync(ctx)
			eventually(t, 5*time.Second, "writer waiting", func() bool { return waiters(wc) == 1 })
			if got := announced(t, srv, "pref"); got != map[bool]int64{false: 0, true: 1}[prefer] {
				t.Fatalf("%d writers announced", got)
			}

			newcomer := rw.New(nc, "pref", opts...).Read()
			ls, err := newcomer.TryAcquire(ctx)
			if !prefer {
				if err != nil {
					t.Fatalf("new reader without preference: %v", err)
				}
				release(t, ls)
				release(t, first)
				release(t, result(t, f, woken))
				return
			}
			wantErr(t, err, lease.ErrNotAcquired)
			// A holder's nested read is admitted: refusing it would deadlock
			// the holder with the writer waiting for it.
			release(t, mustTry(t, rw.New(rc, "pref", opts...).Read(), first.Context()))
			g := newcomer.AcquireAsync(ctx)
			eventually(t, 5*time.Second, "new reader waiting", func() bool { return waiters(nc) == 1 })

			release(t, first)
			wl := result(t, f, woken)
			if n := announced(t, srv, "pref"); n != 0 {
				t.Fatalf("%d writers still announced after the writer got in", n)
			}
			if isDone(g) {
				t.Fatal("held-back reader got in alongside the writer")
			}
			release(t, wl)
			release(t, result(t, g, woken))
		})
	}
}

// With writer preference a writer is not starved by a stream of readers that
// keep overlapping, so that the lock is never free of readers on its own:
// new readers stand back, the ones inside drain, the writer gets in.
func TestWriterNotStarvedByReaderStream(t *testing.T) {
	srv := redistest.Start(t)
	rcs := []*leasehold.Client{open(t, srv), open(t, srv)}
	wc := open(t, srv)
	opt := leasehold.WithWriterPreference()
	stream, stop := context.WithCancel(context.Background())
	defer stop()

	// Four readers, each holding 200ms then coming straight back, started
	// 50ms apart: at any moment about three of them hold.
	const readers, hold = 4, 200 * time.Millisecond
	ls := make([]lease.Locker, readers)
	for i := range ls {
		ls[i] = rw.New(rcs[i%len(rcs)], "stream", opt).Read()
	}
	wait := locktest.Stream(t, stream, ls, hold, hold/readers)
	eventually(t, 5*time.Second, "readers overlapping", func() bool {
		rs, _ := owners(t, srv, "stream")
		return len(rs) >= 2
	})
	// The writer needs the readers inside to finish (200ms each) once new
	// ones stand back; 10s leaves ample room on loaded cores, while without
	// preference the stream would keep it out for good.
	start := time.Now()
	wl, err := rw.New(wc, "stream", opt).Write().Acquire(ctxTimeout(t, 10*time.Second))
	if err != nil {
		t.Fatalf("writer starved by the reader stream: %v", err)
	}
	t.Logf("writer in after %v", time.Since(start))
	if rs, _ := owners(t, srv, "stream"); len(rs) != 0 {
		t.Fatalf("writer holds alongside readers %v", rs)
	}
	release(t, wl)
	// Readers resume once the writer is gone.
	eventually(t, 5*time.Second, "readers back after the writer", func() bool {
		rs, _ := owners(t, srv, "stream")
		return len(rs) >= 1
	})
	stop()
	wait()
}

// A preferring writer that gives up waiting withdraws its announcement and
// wakes the readers it held back; otherwise they would wait for the
// announcement to expire (the holder's 30s lease plus a grace).
func TestWriterGivingUpWakesReaders(t *testing.T) {
	srv := redistest.Start(t)
	rc, wc, nc := open(t, srv), open(t, srv), open(t, srv)
	opt := leasehold.WithWriterPreference()
	ctx := ctxTimeout(t, 20*time.Second)
	first := mustAcquire(t, rw.New(rc, "giveup", opt).Read(), ctx)
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := rw.New(wc, "giveup", opt).Write().AcquireAsync(wctx)
	eventually(t, 5*time.Second, "writer announced", func() bool { return announced(t, srv, "giveup") == 1 })
	g := rw.New(nc, "giveup", opt).Read().AcquireAsync(ctx)
	eventually(t, 5*time.Second, "reader held back", func() bool { return waiters(nc) == 1 })

	gaveUp := time.Now()
	f.Cancel()
	_, err := f.Result()
	wantErr(t, err, context.Canceled)
	release(t, result(t, g, woken))
	t.Logf("held-back reader in %v after the writer gave up", time.Since(gaveUp))
	if n := announced(t, srv, "giveup"); n != 0 {
		t.Fatalf("%d writers announced after the writer gave up", n)
	}
	release(t, first)
}

// TryAcquire does not wait, so a failed one announces no writer.
func TestWriterTryAcquireDoesNotAnnounce(t *testing.T) {
	srv := redistest.Start(t)
	rc, wc := open(t, srv), open(t, srv)
	opt := leasehold.WithWriterPreference()
	ctx := ctxTimeout(t, 10*time.Second)
	first := mustAcquire(t, rw.New(rc, "try", opt).Read(), ctx)
	_, err := rw.New(wc, "try", opt).Write().TryAcquire(ctx)
	wantErr(t, err, lease.ErrNotAcquired)
	if n := announced(t, srv, "try"); n != 0 {
		t.Fatalf("failed TryAcquire announced %d writers", n)
	}
	release(t, mustTry(t, rw.New(wc, "try", opt).Read(), ctx))
	release(t, first)
}
