package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

// TestLossOverlap measures the overlap a foreign removal of a lock causes:
// from the moment the removal is sent (the lock is free for anyone once it
// has run) to the old holder's Lost(), per cause, with the default 30s
// watchdog (whose next renewal is up to 10s away). It fails if any holder
// took longer than 2s to hear, and logs p50, p99 and max (go test -v). An
// expiry nobody else touches is heard when Redis' active expiry finds the
// key (it samples keys 10 times a second); one another client takes is
// heard at once, its access expiring the key.
func TestLossOverlap(t *testing.T) {
	srv := redistest.Start(t)
	holder, operator := locktest.Open(t, srv), locktest.Open(t, srv)
	trials := pick(20, 100)
	// The removals come on a connection of their own, open all along, as
	// another service's would.
	fc := srv.Client()
	do := func(args ...string) {
		if err := fc.Do(context.Background(), fc.B().Arbitrary(args...).Build()).Error(); err != nil {
			t.Error(err)
		}
	}
	// taken is the expiry of a lock another client then takes: its access
	// expires the key, which sends the invalidation in the same moment. The
	// overlap runs from its attempt.
	var taken time.Time
	causes := []struct {
		name string
		do   func(name, owner string)
	}{
		{"DEL", func(name, _ string) { do("DEL", name) }},
		{"UNLINK", func(name, _ string) { do("UNLINK", name) }},
		{"FLUSHDB", func(string, string) { do("FLUSHDB") }},
		{"FLUSHALL", func(string, string) { do("FLUSHALL") }},
		{"expiry, found by Redis", func(name, _ string) { do("PEXPIRE", name, "1") }},
		{"expiry, then taken by another", func(name, _ string) {
			do("PEXPIRE", name, "1")
			time.Sleep(2 * time.Millisecond)
			taken = time.Now()
			l, err := rlock.New(operator, name).TryAcquire(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			_ = l.Release(context.Background())
		}},
		{"HDEL of the owner", func(name, owner string) { do("HDEL", name, owner) }},
		{"force release", func(name, _ string) {
			if _, err := rlock.New(operator, name).ForceRelease(context.Background()); err != nil {
				t.Error(err)
			}
		}},
		{"overwritten (SET)", func(name, _ string) { do("SET", name, "x") }},
	}
	var table []string
	for _, cause := range causes {
		took := make([]time.Duration, 0, trials)
		for i := range trials {
			name := fmt.Sprintf("overlap:%s:%d", strings.ReplaceAll(cause.name, " ", "-"), i)
			l, err := rlock.New(holder, name).Acquire(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond) // held a while: its key is tracked (see armDelay)
			start := time.Now()
			taken = time.Time{}
			cause.do(name, l.Owner())
			if !taken.IsZero() {
				start = taken
			}
			select {
			case <-l.Lost():
				took = append(took, time.Since(start))
			case <-time.After(2 * time.Second):
				t.Fatalf("%s: Lost still open 2s after the removal", cause.name)
			}
			if !errors.Is(l.Err(), lease.ErrLost) {
				t.Fatalf("%s: Err = %v, want ErrLost", cause.name, l.Err())
			}
		}
		slices.Sort(took)
		table = append(table, fmt.Sprintf("| %s | %v | %v | %v |", cause.name,
			took[len(took)/2].Round(10*time.Microsecond), took[(len(took)*99+99)/100-1].Round(10*time.Microsecond),
			took[len(took)-1].Round(10*time.Microsecond)))
	}
	t.Logf("overlap from a foreign removal to Lost(), %d trials per cause:\n| cause | p50 | p99 | max |\n|---|---|---|---|\n%s",
		trials, strings.Join(table, "\n"))
}
