package lua

import (
	"context"
	"fmt"
	"net"
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
			p, err := l.ReleaseTo(ctx, c, owner, successor, "60000", true, time.Millisecond)
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
			p, err := l.ReleaseTo(ctx, c, owner, successor, "60000", true, time.Millisecond)
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

// A release that asks (at the end of its client's turn) passes the lock
// only when nobody else wants it: another connection listening on the
// channel, or a mark left by lock_want whose waiter is due to try within
// the look-ahead, makes it publish and report them; a mark due later lets
// the lock pass, reported pending, so that the next release asks again.
// lock_want keeps the mark of the waiter due first, and deletes it once its
// waiter holds the lock.
func TestHandoffAsksWhoWantsTheLock(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const name, owner, successor, poller = "w", "client:1:1", "client:1:2", "client:2:1"
	k := script.KeysOf(name)
	l := NewLock(name, Config{Lease: time.Minute, Latch: time.Minute})
	hold := func() {
		srv.Do("FLUSHALL")
		srv.Do("HSET", name, owner, "1")
		srv.Do("SET", k.Token, "1795867301656941")
	}
	want := func(o string, delay time.Duration) {
		t.Helper()
		if _, err := l.TryWanting(ctx, c, o, delay, 10*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}

	// Nobody else: passed, nothing pending.
	hold()
	if p, err := l.ReleaseTo(ctx, c, owner, successor, "60000", true, 5*time.Millisecond); err != nil || p.Outcome != HandedOff || p.Pending {
		t.Fatalf("nobody else: %+v, %v; want passed, nothing pending", p, err)
	}

	// A poller due in 2s, the release looking 5ms ahead: passed, pending;
	// looking 3s ahead: published, the mark's 2.01s reported.
	hold()
	want(poller, 2*time.Second)
	if ms, _ := srv.Do("PTTL", k.Wanted).AsInt64(); ms < 1900 || ms > 2010 {
		t.Fatalf("the mark has %dms to live, want 2010 (delay and margin)", ms)
	}
	if p, err := l.ReleaseTo(ctx, c, owner, successor, "60000", true, 5*time.Millisecond); err != nil || p.Outcome != HandedOff || !p.Pending {
		t.Fatalf("a poller due later: %+v, %v; want passed, pending", p, err)
	}
	srv.Do("HDEL", name, successor)
	srv.Do("HSET", name, owner, "1")
	msgs := listen(t, srv, k.Channel)
	p, err := l.ReleaseTo(ctx, c, owner, successor, "60000", true, 3*time.Second)
	// The mark's time left: up to 2.01s, less this test's round trips since.
	if err != nil || p.Outcome != Yielded || p.Listeners != 0 || p.Mark < time.Second || p.Mark > 2010*time.Millisecond {
		t.Fatalf("a poller due within the look-ahead: %+v, %v; want published for it, its mark's time left", p, err)
	}
	if n, _ := srv.Do("EXISTS", name).AsInt64(); n != 0 {
		t.Fatal("the lock was not freed")
	}
	if m := next(t, msgs); m != k.Channel+" "+script.UnlockMessage {
		t.Fatalf("message %q, want the unlock message", m)
	}

	// Of two pollers the one due first keeps the mark; it is deleted once
	// a poller holds the lock.
	hold()
	want(poller, 2*time.Second)
	want("client:3:1", time.Second)
	want("client:4:1", 1500*time.Millisecond)
	if ms, _ := srv.Do("PTTL", k.Wanted).AsInt64(); ms > 1010 {
		t.Fatalf("the mark has %dms to live, want the earliest waiter's 1010", ms)
	}
	srv.Do("DEL", name)
	if g, err := l.TryWanting(ctx, c, poller, time.Second, 10*time.Millisecond); err != nil || !g.Acquired {
		t.Fatalf("TryWanting on a free lock: %+v, %v", g, err)
	}
	if n, _ := srv.Do("EXISTS", k.Wanted).AsInt64(); n != 0 {
		t.Fatal("the mark outlived its waiter's acquisition")
	}
	// A free lock is wanted by nobody: no mark.
	srv.Do("FLUSHALL")
	if _, err := l.Release(ctx, c, poller, "", true, 0); err != nil {
		t.Fatal(err)
	}
	if n, _ := srv.Do("EXISTS", k.Wanted).AsInt64(); n != 0 {
		t.Fatal("a mark on a free lock")
	}

	// Another listener (besides this client's, which the test's pattern
	// subscription does not stand for: a plain subscription here) makes
	// the asking release publish with no mark.
	hold()
	listenPlain(t, srv, k.Channel) // this client's own waiter
	listenPlain(t, srv, k.Channel) // another client's
	p, err = l.ReleaseTo(ctx, c, owner, successor, "60000", true, time.Millisecond)
	if err != nil || p.Outcome != Yielded || p.Listeners != 1 || p.Mark != 0 {
		t.Fatalf("another listener: %+v, %v; want published for one other listener", p, err)
	}
	// Without asking, it passes whoever listens.
	hold()
	if p, err := l.ReleaseTo(ctx, c, owner, successor, "60000", false, 0); err != nil || p.Outcome != HandedOff {
		t.Fatalf("without asking: %+v, %v; want passed", p, err)
	}
}

// listenPlain subscribes a connection of its own to channel, as a waiting
// client's is, until the test ends.
func listenPlain(t *testing.T, srv *redistest.Server, channel string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := fmt.Fprintf(conn, "SUBSCRIBE %s\r\n", channel); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Read(make([]byte, 256)); err != nil { // the confirmation
		t.Fatal(err)
	}
	return conn
}
