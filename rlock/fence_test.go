package rlock_test

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/engine"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/script"
)

// RaiseToken only ever raises the fencing counter, exactly even beyond the
// 2^53 that Lua's numbers hold, and the next acquisition draws above it.
func TestRaiseToken(t *testing.T) {
	raise := func(ctx context.Context, l lease.Locker, floor uint64) (uint64, error) {
		tok, _, err := engine.RaiseToken(ctx, l, floor)
		return tok, err
	}
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := ctxTimeout(t, 10*time.Second)
	tests := []struct {
		name  string
		start string // counter before; "" for none
		floor uint64
		want  uint64
	}{
		{"no counter yet", "", 10, 10},
		{"raised", "7", 1000, 1000},
		{"never lowered", "1000", 7, 1000},
		{"equal", "42", 42, 42},
		{"same length, lower", "95", 19, 95},
		{"beyond 2^53", "9007199254740993", 9007199254740995, 9007199254740995},
		{"lower, beyond 2^53", "9007199254740995", 9007199254740993, 9007199254740995},
		{"up to 2^63-1", "1", math.MaxInt64, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "fence-" + tt.name
			if tt.start != "" {
				srv.Do("SET", script.KeysOf(name).Token, tt.start)
			}
			got, err := raise(ctx, rlock.New(c, name), tt.floor)
			if err != nil || got != tt.want {
				t.Fatalf("RaiseToken(%d) over %q = %d, %v; want %d", tt.floor, tt.start, got, err, tt.want)
			}
			if v, _ := srv.Do("GET", script.KeysOf(name).Token).ToString(); v != "" && v != strconv.FormatUint(tt.want, 10) {
				t.Fatalf("counter %s, want %d", v, tt.want)
			}
		})
	}

	t.Run("next acquisition draws above", func(t *testing.T) {
		// An hour ahead of the server's clock: the counter, not the
		// clock, gives the next token.
		floor := uint64(time.Now().Add(time.Hour).UnixMicro())
		l := rlock.New(c, "fence-next")
		if _, err := raise(ctx, l, floor); err != nil {
			t.Fatal(err)
		}
		ls := mustAcquire(t, l, ctx)
		if ls.Token() != floor+1 {
			t.Fatalf("token %d after a raise to %d, want one more", ls.Token(), floor)
		}
		release(t, ls)
	})

	t.Run("bad input", func(t *testing.T) {
		_, err := raise(ctx, rlock.New(c, "fence-big"), math.MaxInt64+1)
		wantErr(t, err, lease.ErrInvalid)
		_, err = raise(ctx, rlock.New(nil, "fence-nil"), 1)
		wantErr(t, err, lease.ErrInvalid)
		_, err = raise(ctx, rlock.New(c, ""), 1)
		wantErr(t, err, lease.ErrInvalid)
	})
}
