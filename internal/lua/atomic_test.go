package lua

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/script"
)

// Redis keeps the writes of a script that errors halfway: a script that fails
// must fail before its first write. Each case sets up a state one of the
// script's later commands refuses (a key of another type, a hold count
// HINCRBY refuses, a semaphore count INCRBY refuses or Lua cannot count
// exactly), with something an earlier write would have changed (a token to
// draw, a stale head to prune, a permit to give back), and checks that the
// script fails and Redis is as it was, byte for byte. Before, the lock and
// fair cases failed after a write (a token drawn, a lock deleted, a waiter
// dropped); the semaphore cases failed in INCRBY after giving permits back,
// or went on with a count Lua's doubles do not hold exactly.
func TestFailingScriptWritesNothing(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const name, owner = "n", "client:1"
	k := script.KeysOf(name)
	cfg := Config{Lease: time.Minute, Latch: time.Minute, QueueTimeout: time.Minute, PreferWriters: true, Grace: time.Second}
	fair, sem := NewFair(name, cfg), NewSemaphore(name, cfg)
	errOf := func(_ any, err error) error { return err }
	// stale is a waiter at the head of the fair queue whose deadline has
	// passed: the first attempt prunes it.
	stale := [][]string{{"RPUSH", k.FairQueue, "stale"}, {"ZADD", k.FairTimeout, "0", "stale"}}
	// permit is a permit of owner's that expired: the next attempt gives
	// it back.
	permit := []string{"ZADD", k.SemaphoreTimeout, "1", PermitID(owner, 0)}
	max := strconv.FormatInt(MaxPermits, 10)

	tests := []struct {
		name  string
		setup [][]string
		run   func() error
		want  string // in the error
	}{
		{"lock_acquire: re-entry on a count not an integer",
			[][]string{{"HSET", name, owner, "x"}},
			func() error { return errOf(NewLock(name, cfg).Try(ctx, c, owner, false)) },
			"not an integer"},
		{"lock_acquire: re-entry on a count at 2^63-1",
			[][]string{{"HSET", name, owner, "9223372036854775807"}},
			func() error { return errOf(NewLock(name, cfg).Try(ctx, c, owner, false)) },
			"not an integer below 2^63-1"},
		{"lock_acquire: a new holder on a counter not an integer",
			[][]string{{"SET", k.Token, "x"}},
			func() error { return errOf(NewLock(name, cfg).Try(ctx, c, owner, false)) },
			`holds "x", not an integer`},
		{"election_campaign: re-entry on a count not an integer",
			[][]string{{"HSET", name, owner, "01"}, {"HSET", k.Leader, "owner", owner}},
			func() error { return errOf(NewElection(name, cfg).Campaign("v").Try(ctx, c, owner, false)) },
			"not an integer"},
		{"fair_acquire: re-entry on a count not an integer",
			append(stale, []string{"HSET", name, owner, "x"}),
			func() error { return errOf(fair.Try(ctx, c, owner, true)) },
			"not an integer"},
		{"fair_abandon: timeouts of another type",
			[][]string{{"RPUSH", k.FairQueue, owner}, {"SET", k.FairTimeout, "x"}},
			func() error { return errOf(fair.abandon(ctx, c, owner)) },
			"WRONGTYPE"},
		{"fair_keep: timeouts of another type",
			append([][]string{{"RPUSH", k.FairQueue, "stale", owner}}, []string{"SET", k.FairTimeout, "x"}),
			func() error { return c.Do(ctx, fair.Keep.Call([]string{owner}).Eval(c, false)).Error() },
			"WRONGTYPE"},
		{"fair_force_release: queue of another type",
			[][]string{{"HSET", name, owner, "1"}, {"SET", k.FairQueue, "x"}},
			func() error { return errOf(fair.ForceRelease(ctx, c)) },
			"WRONGTYPE"},
		{"fair_release: queue of another type",
			[][]string{{"HSET", name, owner, "1"}, {"SET", k.FairQueue, "x"}},
			func() error { return errOf(fair.Release(ctx, c, owner, "r", true, 0)) },
			"WRONGTYPE"},
		{"fair_release: timeouts of another type",
			[][]string{{"HSET", name, owner, "1"}, {"RPUSH", k.FairQueue, "w"}, {"SET", k.FairTimeout, "x"}},
			func() error { return errOf(fair.Release(ctx, c, owner, "r", false, 0)) },
			"WRONGTYPE"},
		{"rw_read_acquire: re-entry on a count not an integer",
			[][]string{{"HSET", name, "mode", "read", owner, "x"}},
			func() error { return errOf(NewRead(name, cfg).Try(ctx, c, owner, false)) },
			"not an integer"},
		{"rw_write_acquire: re-entry on a count not an integer",
			[][]string{{"HSET", name, "mode", "write", writeField(owner), "x"}},
			func() error { return errOf(NewWrite(name, cfg).Try(ctx, c, owner, true)) },
			"not an integer"},
		{"rw_read_release: writers of another type",
			[][]string{{"HSET", name, "mode", "read", owner, "1"}, {"SET", k.ReadHolds(owner) + ":1", "1"},
				{"SET", k.Writers, "x"}},
			func() error { return errOf(NewRead(name, cfg).Release(ctx, c, owner, "r", false, 0)) },
			"WRONGTYPE"},
		{"semaphore_acquire: a count with a leading zero",
			[][]string{{"SET", name, "05"}, permit},
			func() error { return errOf(sem.Weighted(1).Try(ctx, c, "client:2", true)) },
			`holds "05", not a number of permits`},
		{"semaphore_release: a count of -0",
			[][]string{{"SET", name, "-0"}, permit},
			func() error { return errOf(sem.Weighted(1).Release(ctx, c, owner, "r", true, 0)) },
			`holds "-0", not a number of permits`},
		{"semaphore_release: a count beyond MaxPermits",
			[][]string{{"SET", name, "9007199254740992"}, permit},
			func() error { return errOf(sem.Weighted(1).Release(ctx, c, owner, "r", true, 0)) },
			"holds 9007199254740992 permits, beyond " + max},
		{"semaphore_add: a count beyond int64",
			[][]string{{"SET", name, "99999999999999999999"}},
			func() error { return errOf(sem.AddPermits(ctx, c, 1)) },
			"holds 99999999999999999999 permits, beyond " + max},
		{"semaphore_add: a sum beyond MaxPermits",
			[][]string{{"SET", name, max}},
			func() error { return errOf(sem.AddPermits(ctx, c, 1)) },
			"adding 1 permits to the " + max + " available would leave 9007199254740992"},
		{"semaphore_add: a sum below -MaxPermits",
			[][]string{{"SET", name, "-5"}},
			func() error { return errOf(sem.AddPermits(ctx, c, -int(MaxPermits))) },
			"would leave -9007199254740996, beyond ±" + max},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.Do("FLUSHALL")
			for _, cmd := range tt.setup {
				if err := srv.Do(cmd...).Error(); err != nil {
					t.Fatalf("%v: %v", cmd, err)
				}
			}
			before := snapshot(t, srv)
			err := tt.run()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one saying %q", err, tt.want)
			}
			if after := snapshot(t, srv); after != before {
				t.Fatalf("the script wrote before failing:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// An AddPermits whose sum the semaphore cannot hold is an *OutOfRange, which
// package semaphore reports as bad input.
func TestAddPermitsOutOfRange(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sem := NewSemaphore("s", Config{Lease: time.Minute})
	srv.Do("SET", "s", strconv.FormatInt(MaxPermits-1, 10))
	tests := []struct {
		give int
		want int64 // available after, or -1 for an *OutOfRange
	}{
		{2, -1},
		{1, MaxPermits},
		{1, -1},
		{-MaxPermits, 0},
		{-MaxPermits, -MaxPermits},
		{-1, -1},
	}
	for _, tt := range tests {
		got, err := sem.AddPermits(ctx, c, tt.give)
		var over *OutOfRange
		switch {
		case tt.want == -1 && !errors.As(err, &over):
			t.Fatalf("AddPermits(%d) = %d, %v; want an *OutOfRange", tt.give, got, err)
		case tt.want != -1 && (err != nil || got != tt.want):
			t.Fatalf("AddPermits(%d) = %d, %v; want %d", tt.give, got, err, tt.want)
		}
	}
}

// snapshot is every key of srv with its type, TTL and serialized value.
func snapshot(t *testing.T, srv *redistest.Server) string {
	t.Helper()
	keys, err := srv.Do("KEYS", "*").AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		typ, _ := srv.Do("TYPE", k).ToString()
		ttl, _ := srv.Do("PTTL", k).AsInt64()
		dump, _ := srv.Do("DUMP", k).ToString()
		fmt.Fprintf(&b, "%s(%s, ttl %v)=%q ", k, typ, ttl > 0, dump)
	}
	return b.String()
}
