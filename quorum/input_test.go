package quorum_test

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/quorum"
	"github.com/leasehold/leasehold/rlock"
)

// Bad input is returned by every Acquire, at once and wrapped around
// lease.ErrInvalid (or ErrClosed), never as a panic, and leaves nothing held.
func TestBadInput(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	closed := open(t, srv)
	closed.Close()
	a, b := rlock.New(c, "a"), rlock.New(c, "b")
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
		{"redlock majority closed", quorum.RedLock(a, rlock.New(closed, "a"), rlock.New(closed, "a")), lease.ErrClosed},
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
