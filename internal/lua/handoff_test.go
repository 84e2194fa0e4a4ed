package lua

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/script"
)

// lock_handoff releases before it knows whether it may pass the lock, so
// nothing after its first write may fail: a fencing counter that INCR
// refuses (not an integer, of another type, at 2^63-1, with a leading zero)
// makes no handoff and no error. The lock is freed, its unlock message sent
// (a woken waiter then meets the counter in its own acquire, and reports
// it), and the counter is left as it was. A plain counter passes the lock,
// with a token above the counter and the successor's full lease.
func TestHandoffOnACounterItCannotDraw(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const name, owner, successor = "n", "client:1:1", "client:1:2"
	k := script.KeysOf(name)
	l := NewLock(name, Config{Lease: time.Minute, Latch: time.Minute})
	// A pattern subscription: PUBSUB NUMSUB does not count it, so the
	// script goes on to draw.
	msgs := listen(t, srv, k.Channel)
	for _, tt := range []struct {
		name    string
		counter []string // the command that sets the counter
	}{
		{"not an integer", []string{"SET", k.Token, "x"}},
		{"another type", []string{"RPUSH", k.Token, "1"}},
		{"at 2^63-1", []string{"SET", k.Token, "9223372036854775807"}},
		{"a leading zero", []string{"SET", k.Token, "01795867301656941"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv.Do("FLUSHALL")
			srv.Do("HSET", name, owner, "1")
			srv.Do(tt.counter...)
			before := dump(srv, k.Token)
			p, err := l.ReleaseTo(ctx, c, owner, successor, "60000", false)
			if err != nil || p.Outcome != Freed {
				t.Fatalf("ReleaseTo: %+v, %v; want the lock freed (%d) and no error", p, err, Freed)
			}
			if n, _ := srv.Do("EXISTS", name).AsInt64(); n != 0 {
				t.Fatalf("the lock is still there: %v", srv.Do("HGETALL", name))
			}
			if after := dump(srv, k.Token); after != before {
				t.Fatalf("the counter changed: %s, was %s", after, before)
			}
			if m := next(t, msgs); m != k.Channel+" "+script.UnlockMessage {
				t.Fatalf("message %q, want the unlock message", m)
			}
		})
	}
	// A counter drawn from the clock below 2^53 is the script's common
	// case, its reply the token alone, an integer; at 2^53 and above it
	// replies "2 TOKEN", the token read back as Redis holds it.
	for _, tt := range []struct {
		name    string
		counter uint64
	}{
		{"plain", 1795867301656941},
		{"just below 2^53", 1<<53 - 2},
		{"to 2^53", 1<<53 - 1},
		{"past 2^53", 1<<53 + 2}, // to an odd token, which no float64 holds
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv.Do("FLUSHALL")
			srv.Do("HSET", name, owner, "1")
			srv.Do("SET", k.Token, strconv.FormatUint(tt.counter, 10))
			p, err := l.ReleaseTo(ctx, c, owner, successor, "60000", false)
			if err != nil || p.Outcome != HandedOff || p.Token != tt.counter+1 {
				t.Fatalf("ReleaseTo: %+v, %v; want the lock passed with token %d", p, err, tt.counter+1)
			}
			if h, _ := srv.Do("HGETALL", name).AsStrMap(); len(h) != 1 || h[successor] != "1" {
				t.Fatalf("the lock holds %v, want the successor alone", h)
			}
			for _, key := range []string{name, k.Token} {
				// A full lease, less what this test's own round trips took.
				if ms, _ := srv.Do("PTTL", key).AsInt64(); ms < 50000 || ms > 60000 {
					t.Fatalf("%s has %dms to live, want the successor's lease of 60000", key, ms)
				}
			}
		})
	}
}

// dump is key's DUMP: its type, value and encoding.
func dump(srv *redistest.Server, key string) string {
	s, _ := srv.Do("DUMP", key).ToString()
	return s
}
