package semaphore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/script"
	"github.com/leasehold/leasehold/semaphore"
)

// call is one operation on a semaphore, as a test table names it.
type call struct {
	op  string // the *lease.Error's Op
	run func(ctx context.Context) error
}

// calls are every operation on s whose weight is n: the permit lockers', and
// the semaphore's own.
func calls(s *semaphore.Semaphore, n int) []call {
	l := s.Weighted(n)
	leaseErr := func(_ *lease.Lease, err error) error { return err }
	return []call{
		{"acquire", func(ctx context.Context) error { return leaseErr(l.Acquire(ctx)) }},
		{"try-acquire", func(ctx context.Context) error { return leaseErr(l.TryAcquire(ctx)) }},
		{"acquire", func(ctx context.Context) error { return leaseErr(l.AcquireAsync(ctx).Result()) }},
		{"set-permits", func(ctx context.Context) error { _, err := s.TrySetPermits(ctx, 1); return err }},
		{"add-permits", func(ctx context.Context) error { return s.AddPermits(ctx, 1) }},
		{"inspect", func(ctx context.Context) error { _, err := s.AvailablePermits(ctx); return err }},
	}
}

// wantFailure fails the test unless err is a *lease.Error of op on name
// wrapping target and saying says.
func wantFailure(t *testing.T, err error, op, name string, target error, says string) {
	t.Helper()
	var le *lease.Error
	if !errors.As(err, &le) || le.Op != op || le.Name != name || !errors.Is(err, target) || !strings.Contains(err.Error(), says) {
		t.Fatalf("error %v; want a %s *lease.Error on %q wrapping %v and saying %q", err, op, name, target, says)
	}
}

// Bad input fails with a clear *lease.Error naming the operation and the
// semaphore, and changes nothing in Redis (compared byte for byte): a weight
// out of range or above the total, a negative TrySetPermits, a name holding
// a key of another type or a count that is not an integer. The weight and
// the total are checked before any round trip or in the script before its
// first write; a wrong type fails in the script before its first write.
func TestBadInput(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	closed := open(t, srv)
	closed.Close()
	ctx := ctxTimeout(t, 30*time.Second)
	// Some state to keep: a semaphore of 3 with a permit held.
	held := mustAcquire(t, newSet(t, c, "sem", 3), ctx)
	defer release(t, held)

	t.Run("weights", func(t *testing.T) {
		for _, tt := range []struct {
			name   string
			weight int
			says   string
		}{
			{"zero", 0, "weight 0"},
			{"negative", -1, "weight -1"},
			{"above MaxWeight", 65536 + 1, "weight 65537"},
			{"above the total", 4, "4 permits asked of a semaphore of 3"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				before := locktest.Snapshot(t, srv)
				for i, cl := range calls(semaphore.New(c, "sem"), tt.weight)[:3] { // the lockers'

					err := cl.run(ctx)
					wantFailure(t, err, cl.op, "sem", lease.ErrInvalid, tt.says)
					if after := locktest.Snapshot(t, srv); after != before {
						t.Fatalf("call %d changed Redis:\nbefore %s\nafter  %s", i, before, after)
					}
				}
			})
		}
	})
	t.Run("negative permits", func(t *testing.T) {
		before := locktest.Snapshot(t, srv)
		_, err := semaphore.New(c, "unset").TrySetPermits(ctx, -1)
		wantFailure(t, err, "set-permits", "unset", lease.ErrInvalid, "-1 permits")
		if after := locktest.Snapshot(t, srv); after != before {
			t.Fatalf("changed Redis:\nbefore %s\nafter  %s", before, after)
		}
	})
	t.Run("client and name", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			s    *semaphore.Semaphore
			want error
		}{
			{"empty name", semaphore.New(c, ""), lease.ErrInvalid},
			{"nil client", semaphore.New(nil, "x"), lease.ErrInvalid},
			{"closed client", semaphore.New(closed, "x"), lease.ErrClosed},
			{"bad lease time", semaphore.New(c, "x", leasehold.WithLeaseTime(-1)), lease.ErrInvalid},
		} {
			t.Run(tt.name, func(t *testing.T) {
				for _, cl := range calls(tt.s, 1) {
					wantErr(t, cl.run(ctx), tt.want)
				}
			})
		}
	})
}

// TrySetPermits and AddPermits refuse a count the scripts cannot hold exactly
// (Lua counts in doubles, exact to 2^53) with a *lease.Error wrapping
// lease.ErrInvalid that gives the numbers, and change nothing: AddPermits(1<<62)
// used to be accepted. An n out of range is refused before any round trip; a
// sum out of range by the script, before it writes, so that two AddPermits at
// once cannot pass a check made apart from the write.
func TestPermitBounds(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := ctxTimeout(t, 30*time.Second)
	const most = 1<<53 - 1 // the most permits a semaphore counts exactly
	tests := []struct {
		name  string
		start string // the count before, "" for a semaphore never set
		set   bool   // TrySetPermits(give), else AddPermits(give)
		give  int
		want  int64  // the count after; unused when says is set
		says  string // the error, "" for none
	}{
		{"set 0", "", true, 0, 0, ""},
		{"set MaxPermits", "", true, most, most, ""},
		{"set negative", "", true, -1, 0, "-1 permits is not from 0 to 9007199254740991"},
		{"set above MaxPermits", "", true, most + 1, 0, "9007199254740992 permits is not from 0 to 9007199254740991"},
		{"set 1<<62", "", true, 1 << 62, 0, "4611686018427387904 permits is not from 0 to 9007199254740991"},
		{"add MaxPermits", "", false, most, most, ""},
		{"add -MaxPermits", "0", false, -most, -most, ""},
		{"add up to MaxPermits", "9007199254740990", false, 1, most, ""},
		{"add 1<<62", "", false, 1 << 62, 0,
			"4611686018427387904 permits is not from -9007199254740991 to 9007199254740991"},
		{"add -(1<<62)", "5", false, -(1 << 62), 0,
			"-4611686018427387904 permits is not from -9007199254740991 to 9007199254740991"},
		{"add above MaxPermits", "", false, most + 1, 0,
			"9007199254740992 permits is not from -9007199254740991 to 9007199254740991"},
		{"add past MaxPermits", "9007199254740990", false, 2, 0,
			"adding 2 permits to the 9007199254740990 available would leave 9007199254740992, beyond ±9007199254740991"},
		{"add past -MaxPermits", "-1", false, -most, 0,
			"adding -9007199254740991 permits to the -1 available would leave -9007199254740992, beyond ±9007199254740991"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.Do("FLUSHALL")
			if tt.start != "" {
				srv.Do("SET", "bound", tt.start)
			}
			before := locktest.Snapshot(t, srv)
			s := semaphore.New(c, "bound")
			var err error
			op := "add-permits"
			if tt.set {
				op = "set-permits"
				_, err = s.TrySetPermits(ctx, tt.give)
			} else {
				err = s.AddPermits(ctx, tt.give)
			}
			if tt.says != "" {
				wantFailure(t, err, op, "bound", lease.ErrInvalid, tt.says)
				if after := locktest.Snapshot(t, srv); after != before {
					t.Fatalf("changed Redis:\nbefore %s\nafter  %s", before, after)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s(%d): %v", op, tt.give, err)
			}
			if n := count(t, srv, "bound"); n != tt.want {
				t.Fatalf("%s(%d) left %d, want %d", op, tt.give, n, tt.want)
			}
		})
	}
}

// A name holding something else fails every operation in its script before
// the first write, with Redis' own word for it, and leaves Redis as it was.
func TestWrongLayout(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx := ctxTimeout(t, 30*time.Second)
	for _, tt := range []struct {
		name string
		set  func(name string)
		says string
		ops  map[string]bool // the ops that read the corrupt key; nil: all
	}{
		{"name a list", func(n string) { srv.Do("RPUSH", n, "x") }, "WRONGTYPE", nil},
		{"name a hash (a lock)", func(n string) { srv.Do("HSET", n, "owner:1", "1") }, "WRONGTYPE", nil},
		{"count not an integer", func(n string) { srv.Do("SET", n, "three") }, `holds "three", not a number of permits`,
			map[string]bool{"acquire": true, "try-acquire": true, "add-permits": true, "inspect": true}},
		{"count with a leading zero", func(n string) { srv.Do("SET", n, "03") }, `holds "03", not a number of permits`,
			map[string]bool{"acquire": true, "try-acquire": true, "add-permits": true, "inspect": true}},
		{"count beyond MaxPermits", func(n string) { srv.Do("SET", n, "9007199254740992") },
			"holds 9007199254740992 permits, beyond 9007199254740991",
			map[string]bool{"acquire": true, "try-acquire": true, "add-permits": true, "inspect": true}},
		{"permits a string", func(n string) {
			srv.Do("SET", n, "3")
			srv.Do("SET", script.KeysOf(n).SemaphoreTimeout, "x")
		}, "WRONGTYPE", map[string]bool{"acquire": true, "try-acquire": true, "add-permits": true, "inspect": true}},
		{"claims a string", func(n string) {
			srv.Do("SET", n, "3")
			srv.Do("SET", script.KeysOf(n).SemaphoreClaims, "x")
		}, "WRONGTYPE", map[string]bool{"acquire": true, "try-acquire": true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv.Do("FLUSHALL")
			tt.set("bad")
			before := locktest.Snapshot(t, srv)
			for _, cl := range calls(semaphore.New(c, "bad"), 2) {
				if tt.ops != nil && !tt.ops[cl.op] {
					continue
				}
				err := cl.run(ctx)
				wantFailure(t, err, cl.op, "bad", lease.ErrRedis, tt.says)
				if after := locktest.Snapshot(t, srv); after != before {
					t.Fatalf("%s wrote before failing:\nbefore %s\nafter  %s", cl.op, before, after)
				}
			}
		})
	}
}
