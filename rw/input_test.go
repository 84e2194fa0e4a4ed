package rw_test

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rw"
)

func TestBadInput(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	closed := open(t, srv)
	closed.Close()
	ctx := ctxTimeout(t, 5*time.Second)
	tests := []struct {
		name string
		lock *rw.Lock
		want error
	}{
		{"empty name", rw.New(c, ""), lease.ErrInvalid},
		{"zero lease time", rw.New(c, "x", leasehold.WithLeaseTime(0)), lease.ErrInvalid},
		{"negative lease time", rw.New(c, "x", leasehold.WithLeaseTime(-time.Second)), lease.ErrInvalid},
		{"nil client", rw.New(nil, "x"), lease.ErrInvalid},
		{"closed client", rw.New(closed, "x"), lease.ErrClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, l := range []lease.Locker{tt.lock.Read(), tt.lock.Write()} {
				_, err := l.Acquire(ctx)
				wantErr(t, err, tt.want)
				_, err = l.TryAcquire(ctx)
				wantErr(t, err, tt.want)
				_, err = l.AcquireAsync(ctx).Result()
				wantErr(t, err, tt.want)
			}
			_, err := tt.lock.IsLocked(ctx)
			wantErr(t, err, tt.want)
			_, err = tt.lock.RemainTTL(ctx)
			wantErr(t, err, tt.want)
			_, err = tt.lock.ForceRelease(ctx)
			wantErr(t, err, tt.want)
		})
	}
}

// A lock name in use by another kind of lock (an rlock hash, no mode field)
// is never written into: readers and writers wait for it.
func TestForeignKeyUntouched(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := ctxTimeout(t, 5*time.Second)
	srv.Do("HSET", "taken", "someone:1", "1")
	srv.Do("PEXPIRE", "taken", "30000")
	for _, l := range []lease.Locker{rw.New(c, "taken").Read(), rw.New(c, "taken").Write()} {
		_, err := l.TryAcquire(ctx)
		wantErr(t, err, lease.ErrNotAcquired)
	}
	if m := hash(t, srv, "taken"); len(m) != 1 {
		t.Fatalf("foreign lock hash written into: %v", m)
	}
}
