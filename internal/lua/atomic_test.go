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

	"github.com/leasehold/leasehold/internal/redistest"
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
	lease, ft := time.Minute, FairTimes{Queue: time.Minute, Refresh: 20 * time.Second}
	sem := NewSemaphore(name, lease, time.Second)
	errOf := func(_ any, err error) error { return err }
	// stale is a waiter at the head of the fair queue whose deadline has
	// passed: the first attempt prunes it.
	stale := [][]string{{"RPUSH", script.FairQueueKey(name), "stale"}, {"ZADD", script.FairTimeoutKey(name), "0", "stale"}}
	// permit is a permit of owner's that expired: the next attempt gives
	// it back.
	permit := []string{"ZADD", script.SemaphoreTimeoutKey(name), "1", script.PermitID(owner, 0)}
	max := strconv.FormatInt(script.MaxPermits, 10)

	tests := []struct {
		name  string
		setup [][]string
		run   func() error
		want  string // in the error
	}{
		{"lock_acquire: re-entry on a count not an integer",
			[][]string{{"HSET", name, owner, "x"}},
			func() error { return errOf(NewLock(name, lease, time.Minute).Acquire(ctx, c, owner)) },
			"not an integer"},
		{"fair_acquire: re-entry on a count not an integer",
			append(stale, []string{"HSET", name, owner, "x"}),
			func() error { return errOf(AcquireFair(ctx, c, name, owner, lease, ft, true)) },
			"not an integer"},
		{"fair_abandon: timeouts of another type",
			[][]string{{"RPUSH", script.FairQueueKey(name), owner}, {"SET", script.FairTimeoutKey(name), "x"}},
			func() error { return errOf(AbandonFair(ctx, c, name, owner, ft)) },
			"WRONGTYPE"},
		{"fair_force_release: queue of another type",
			[][]string{{"HSET", name, owner, "1"}, {"SET", script.FairQueueKey(name), "x"}},
			func() error { return errOf(ForceReleaseFair(ctx, c, name)) },
			"WRONGTYPE"},
		{"fair_release: queue of another type",
			[][]string{{"HSET", name, owner, "1"}, {"SET", script.FairQueueKey(name), "x"}},
			func() error { return errOf(ReleaseFair(ctx, c, name, owner, "r", lease, time.Minute, ft, true)) },
			"WRONGTYPE"},
		{"fair_release: timeouts of another type",
			[][]string{{"HSET", name, owner, "1"}, {"RPUSH", script.FairQueueKey(name), "w"}, {"SET", script.FairTimeoutKey(name), "x"}},
			func() error { return errOf(ReleaseFair(ctx, c, name, owner, "r", lease, time.Minute, ft, false)) },
			"WRONGTYPE"},
		{"rw_read_acquire: re-entry on a count not an integer",
			[][]string{{"HSET", name, "mode", "read", owner, "x"}},
			func() error { return errOf(AcquireRead(ctx, c, name, owner, "", lease)) },
			"not an integer"},
		{"rw_write_acquire: re-entry on a count not an integer",
			[][]string{{"HSET", name, "mode", "write", script.WriteField(owner), "x"}},
			func() error { return errOf(AcquireWrite(ctx, c, name, owner, lease, true, time.Second)) },
			"not an integer"},
		{"rw_read_release: writers of another type",
			[][]string{{"HSET", name, "mode", "read", owner, "1"}, {"SET", script.ReadHoldKey(name, owner, 1), "1"},
				{"SET", script.WritersKey(name), "x"}},
			func() error { return errOf(ReleaseRead(ctx, c, name, owner, "r", time.Minute, false)) },
			"WRONGTYPE"},
		{"semaphore_acquire: a count with a leading zero",
			[][]string{{"SET", name, "05"}, permit},
			func() error { return errOf(sem.Acquire(ctx, c, "client:2", 1, true)) },
			`holds "05", not a number of permits`},
		{"semaphore_release: a count of -0",
			[][]string{{"SET", name, "-0"}, permit},
			func() error { return errOf(sem.Release(ctx, c, owner, 1)) },
			`holds "-0", not a number of permits`},
		{"semaphore_release: a count beyond MaxPermits",
			[][]string{{"SET", name, "9007199254740992"}, permit},
			func() error { return errOf(sem.Release(ctx, c, owner, 1)) },
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
			func() error { return errOf(sem.AddPermits(ctx, c, -int(script.MaxPermits))) },
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
	sem := NewSemaphore("s", time.Minute, time.Second)
	srv.Do("SET", "s", strconv.FormatInt(script.MaxPermits-1, 10))
	tests := []struct {
		give int
		want int64 // available after, or -1 for an *OutOfRange
	}{
		{2, -1},
		{1, script.MaxPermits},
		{1, -1},
		{-script.MaxPermits, 0},
		{-script.MaxPermits, -script.MaxPermits},
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
