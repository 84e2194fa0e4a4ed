package quorum_test

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/quorum"
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/rw"
	"github.com/leasehold/leasehold/semaphore"
)

// Bad input is returned by every Acquire, at once and wrapped around
// lease.ErrInvalid (or ErrClosed), never as a panic, and leaves nothing held.
func TestBadInput(t *testing.T) {
	srv := redistest.Start(t)
	c, c2 := open(t, srv), open(t, srv)
	closed, closed2 := open(t, srv), open(t, srv)
	closed.Close()
	closed2.Close()
	a, b := rlock.New(c, "a"), rlock.New(c2, "b")
	var typedNil *rlock.Lock
	ctx := ctxTimeout(t, 10*time.Second)
	tests := []struct {
		name string
		l    lease.Locker
		want error
	}{
		{"multi of nothing", quorum.Multi(), lease.ErrInvalid},
		{"redlock of nothing", quorum.RedLock(), lease.ErrInvalid},
		{"nil locker", quorum.Multi(a, nil), lease.ErrInvalid},
		{"typed nil locker", quorum.RedLock(a, typedNil, b), lease.ErrInvalid},
		{"same locker twice", quorum.Multi(a, b, a), lease.ErrInvalid},
		{"negative node timeout", quorum.RedLockWith(quorum.Config{NodeTimeout: -time.Second}, a, b), lease.ErrInvalid},
		{"clock drift of 1", quorum.MultiWith(quorum.Config{ClockDrift: 1}, a, b), lease.ErrInvalid},
		{"negative retry delay", quorum.RedLockWith(quorum.Config{RetryDelay: -1}, a, b), lease.ErrInvalid},
		{"member with bad input", quorum.Multi(a, rlock.New(c, "")), lease.ErrInvalid},
		{"multi member closed", quorum.Multi(a, rlock.New(closed, "b")), lease.ErrClosed},
		{"redlock majority closed", quorum.RedLock(a, rlock.New(closed, "a"), rlock.New(closed2, "a")), lease.ErrClosed},
		{"redlock, two lockers on one Client", quorum.RedLock(rlock.New(c, "d"), rlock.New(c, "d"), rlock.New(c2, "d")), lease.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := tt.l.Acquire(ctx)
			wantErr(t, err, tt.want)
			// Acquire does not retry what no retry can cure. 2s is far
			// above one attempt's few ms, far below ctx's 10s.
			if el := time.Since(start); el > 2*time.Second {
				t.Fatalf("Acquire took %v to report bad input", el)
			}
			_, err = tt.l.TryAcquire(ctx)
			wantErr(t, err, tt.want)
			_, err = tt.l.AcquireAsync(ctx).Result()
			wantErr(t, err, tt.want)
			if exists(t, srv, "a") || exists(t, srv, "b") {
				t.Fatal("a failed acquisition left a member held")
			}
		})
	}
	// A RedLock counts each member as its own Redis: two made on one
	// leasehold Client would count one node twice toward the majority, so
	// they are refused whatever their names and kinds, naming both. A Multi
	// may hold several locks of one Client.
	t.Run("one Client twice", func(t *testing.T) {
		srvs, cs := cluster(t, 3)
		tests := []struct {
			name string
			give lease.Locker
			want string // "" when accepted
		}{
			{"redlock, same name", quorum.RedLock(rlock.New(cs[0], "d"), rlock.New(cs[0], "d"), rlock.New(cs[1], "d")),
				"lockers 0 and 1 run on the same Client"},
			{"redlock, other names", quorum.RedLock(rlock.New(cs[0], "d"), rlock.New(cs[1], "d"), rlock.New(cs[0], "e")),
				"lockers 0 and 2 run on the same Client"},
			{"redlock, other kinds", quorum.RedLock(rlock.New(cs[0], "d"), rlock.New(cs[1], "d"), rw.New(cs[2], "d").Write(), semaphore.New(cs[2], "s")),
				"lockers 2 and 3 run on the same Client"},
			{"redlock of a multi sharing a Client", quorum.RedLock(quorum.Multi(rlock.New(cs[0], "d"), rlock.New(cs[1], "d")), rlock.New(cs[2], "d"), rlock.New(cs[1], "e")),
				"lockers 0 and 2 run on the same Client"},
			{"redlock, one Client each", quorum.RedLock(rlock.New(cs[0], "d"), rlock.New(cs[1], "d"), rlock.New(cs[2], "d")), ""},
			{"multi, one Client", quorum.Multi(rlock.New(cs[0], "d"), rlock.New(cs[0], "e")), ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ls, err := tt.give.TryAcquire(ctx)
				if tt.want == "" {
					if err != nil {
						t.Fatalf("TryAcquire: %v", err)
					}
					release(t, ls)
					return
				}
				wantErr(t, err, lease.ErrInvalid)
				wantMsg(t, err, tt.want)
				_, err = tt.give.Acquire(ctx)
				wantErr(t, err, lease.ErrInvalid)
				wantMsg(t, err, tt.want)
				for _, s := range srvs {
					if exists(t, s, "d") || exists(t, s, "e") {
						t.Fatal("a refused quorum took a member")
					}
				}
			})
		}
	})
	t.Run("error names the quorum", func(t *testing.T) {
		_, err := quorum.Multi(a, nil).Acquire(ctx)
		wantMsg(t, err, "multi(a,#1)")
	})
	t.Run("already cancelled ctx", func(t *testing.T) {
		cctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := quorum.RedLock(a, b).Acquire(cctx)
		wantErr(t, err, context.Canceled)
	})
}
