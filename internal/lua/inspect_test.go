package lua

import (
	"context"
	"encoding/hex"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/fence"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/script"
)

// Inspect reads each kind of lock as the library's own scripts leave it:
// one model of the layout, which the leasehold command shows.
func TestInspect(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const lease = time.Minute
	cfg := Config{Lease: lease, QueueTimeout: lease, PreferWriters: true, Grace: lease}
	// grant checks that an acquisition succeeded, or had to wait, and
	// returns its token: grant(t, true)(l.Acquire(...)).
	grant := func(t *testing.T, acquired bool) func(Grant, error) uint64 {
		return func(g Grant, err error) uint64 {
			t.Helper()
			if err != nil || g.Acquired != acquired {
				t.Fatalf("acquired %v, %v; want %v", g.Acquired, err, acquired)
			}
			return g.Token
		}
	}
	const semOwner, claimer = "2f1c7a4e-9b0d-4c1e-8a5f-3d6b7c8e9f01:7", "w:2"
	permit := func(i int) string { return hex.EncodeToString([]byte(PermitID(semOwner, i))) }

	tests := []struct {
		name  string
		setup func(t *testing.T, name string) (token uint64) // the last token drawn (a re-entry draws none)
		want  State                                          // Name, Token, a Leader's Term and At aside; live durations as lease
	}{
		{"free", func(*testing.T, string) uint64 { return 0 },
			State{Shape: ShapeFree, Type: "none"}},
		{"rlock", func(t *testing.T, name string) uint64 {
			l := NewLock(name, cfg)
			tok := grant(t, true)(l.Try(ctx, c, "a:1", true))
			grant(t, true)(l.Try(ctx, c, "a:1", true)) // a re-entry draws none
			return tok
		}, State{Shape: ShapeRLock, Type: "hash", TTL: lease, Holders: []Holder{{Owner: "a:1", Count: 2}}}},
		{"rlock kept", func(t *testing.T, name string) uint64 {
			l := NewLock(name, cfg)
			tok := grant(t, true)(l.Try(ctx, c, "a:1", true))
			if n, err := l.Release(ctx, c, "a:1", "r", true, lease); n != Freed || err != nil {
				t.Fatalf("release with a keep: %d, %v", n, err)
			}
			return tok
		}, State{Shape: ShapeRLock, Type: "hash", TTL: lease, KeptBy: "a:1"}},
		{"fair kept, a waiter", func(t *testing.T, name string) uint64 {
			f := NewFair(name, cfg)
			tok := grant(t, true)(f.Try(ctx, c, "a:1", true))
			grant(t, false)(f.Try(ctx, c, "b:1", true))
			if n, err := f.Release(ctx, c, "a:1", "r", false, lease); n != Freed || err != nil {
				t.Fatalf("release with a keep: %d, %v", n, err)
			}
			return tok
		}, State{Shape: ShapeFair, Type: "hash", TTL: lease, KeptBy: "a:1",
			Waiters: []Waiter{{Owner: "b:1", Left: lease, Known: true}}}},
		{"fair with a waiter", func(t *testing.T, name string) uint64 {
			tok := grant(t, true)(NewFair(name, cfg).Try(ctx, c, "a:1", true))
			grant(t, false)(NewFair(name, cfg).Try(ctx, c, "b:1", true))
			return tok
		}, State{Shape: ShapeFair, Type: "hash", TTL: lease, Holders: []Holder{{Owner: "a:1", Count: 1}},
			Waiters: []Waiter{{Owner: "b:1", Left: lease, Known: true}}}},
		{"fair, holder gone, waiter left", func(t *testing.T, name string) uint64 {
			tok := grant(t, true)(NewFair(name, cfg).Try(ctx, c, "a:1", true))
			grant(t, false)(NewFair(name, cfg).Try(ctx, c, "b:1", true))
			srv.Do("DEL", name)
			return tok
		}, State{Shape: ShapeFair, Type: "none", Waiters: []Waiter{{Owner: "b:1", Left: lease, Known: true}}}},
		{"rw read, a writer waiting", func(t *testing.T, name string) uint64 {
			grant(t, true)(NewRead(name, cfg).Try(ctx, c, "r:2", true))
			tok := grant(t, true)(NewRead(name, cfg).Try(ctx, c, "r:1", true))
			grant(t, true)(NewRead(name, cfg).Try(ctx, c, "r:1", true)) // a re-entry draws none
			grant(t, false)(NewWrite(name, cfg).Try(ctx, c, "w:1", true))
			return tok
		}, State{Shape: ShapeRW, Type: "hash", Mode: "read", TTL: lease, Holders: []Holder{
			{Owner: "r:1", Count: 2, Reads: []time.Duration{lease, lease}},
			{Owner: "r:2", Count: 1, Reads: []time.Duration{lease}},
		}, Writers: []Waiter{{Owner: writeField("w:1"), Left: lease, Known: true}}}},
		{"rw write", func(t *testing.T, name string) uint64 {
			return grant(t, true)(NewWrite(name, cfg).Try(ctx, c, "w:1", true))
		}, State{Shape: ShapeRW, Type: "hash", Mode: "write", TTL: lease,
			Holders: []Holder{{Owner: "w:1", Count: 1, Write: true}}}},
		{"semaphore, a claim waiting", func(t *testing.T, name string) uint64 {
			s := NewSemaphore(name, cfg)
			if ok, err := s.TrySetPermits(ctx, c, 3); !ok || err != nil {
				t.Fatal(ok, err)
			}
			grant(t, true)(s.Weighted(2).Try(ctx, c, semOwner, true))
			grant(t, false)(s.Weighted(2).Try(ctx, c, claimer, true))
			return 0
		}, State{Shape: ShapeSemaphore, Type: "string", TTL: -1, Semaphore: &SemaphoreState{
			Set: true, Available: 1,
			Permits: []Permit{{ID: permit(0), Left: lease}, {ID: permit(1), Left: lease}},
			Claims:  []Waiter{{Owner: claimer + ":2", Left: lease, Known: true}},
		}}},
		{"election", func(t *testing.T, name string) uint64 {
			return grant(t, true)(NewElection(name, cfg).Campaign("addr").Try(ctx, c, "e:1", true))
		}, State{Shape: ShapeElection, Type: "hash", TTL: lease, Holders: []Holder{{Owner: "e:1", Count: 1}},
			Leader: &LeaderState{Value: "addr", Owner: "e:1"}}},
		{"a string", func(_ *testing.T, name string) uint64 {
			srv.Do("SET", name, "x")
			return 0
		}, State{Shape: ShapeNotLock, Type: "string", TTL: -1}},
		{"a hash of counters", func(_ *testing.T, name string) uint64 {
			srv.Do("HSET", name, "hits", "3")
			return 0
		}, State{Shape: ShapeNotLock, Type: "hash", TTL: -1, Foreign: []string{"hits"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "inspect:" + tt.name
			want := tt.want
			want.Name, want.Token = name, tt.setup(t, name)
			if want.Leader != nil {
				l := *want.Leader
				l.Term = want.Token // the token of its campaign
				want.Leader = &l
			}
			got, err := Inspect(ctx, c, name)
			if err != nil {
				t.Fatal(err)
			}
			checkState(t, got, want)
		})
	}
	t.Run("InspectAll", func(t *testing.T) {
		var names []string
		for _, tt := range tests {
			names = append(names, "inspect:"+tt.name)
		}
		all, err := InspectAll(ctx, c, names)
		if err != nil || len(all) != len(tests) {
			t.Fatalf("%d states, %v; want %d", len(all), err, len(tests))
		}
		for i, s := range all {
			one, err := Inspect(ctx, c, names[i])
			if err != nil {
				t.Fatal(err)
			}
			// TTLs run between the two reads: compare as checkState does.
			checkState(t, norm(s), norm(one))
		}
	})
}

// checkState compares got, normalised (norm), with want, and checks that
// got.At is within a few seconds of now.
func checkState(t *testing.T, got, want State) {
	t.Helper()
	if d := time.Since(got.At); d < -5*time.Second || d > 5*time.Second {
		t.Errorf("At %v, %v from now", got.At, d)
	}
	got.At, want.At = time.Time{}, time.Time{}
	if got = norm(got); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
		if got.Semaphore != nil && want.Semaphore != nil {
			t.Errorf("semaphore got  %+v\nwant %+v", *got.Semaphore, *want.Semaphore)
		}
	}
}

// norm is s with each live duration made 1m, the lease of TestInspect,
// whatever time has passed since the scripts ran: a duration in (0, 2m],
// a lease or an announcement or claim (the wait, up to a lease, plus a
// grace of a lease).
func norm(s State) State {
	d := func(d time.Duration) time.Duration {
		if d > 0 && d <= 2*time.Minute {
			return time.Minute
		}
		return d
	}
	s.TTL = d(s.TTL)
	for i := range s.Holders {
		for j := range s.Holders[i].Reads {
			s.Holders[i].Reads[j] = d(s.Holders[i].Reads[j])
		}
	}
	for _, ws := range [][]Waiter{s.Waiters, s.Writers} {
		for i := range ws {
			ws[i].Left = d(ws[i].Left)
		}
	}
	if s.Semaphore != nil {
		for i := range s.Semaphore.Permits {
			s.Semaphore.Permits[i].Left = d(s.Semaphore.Permits[i].Left)
		}
		for i := range s.Semaphore.Claims {
			s.Semaphore.Claims[i].Left = d(s.Semaphore.Claims[i].Left)
		}
	}
	return s
}

// A semaphore's permits of one lease are one holder; Redisson's, each its own.
func TestSemaphoreStateLeases(t *testing.T) {
	const owner = "2f1c7a4e-9b0d-4c1e-8a5f-3d6b7c8e9f01:7"
	id := func(i int) string { return hex.EncodeToString([]byte(PermitID(owner, i))) }
	s := SemaphoreState{Available: 2, Permits: []Permit{
		{ID: id(0)}, {ID: "00112233445566778899aabbccddeeff"}, {ID: id(1)},
	}}
	want := []PermitLease{{ID: id(0)[:28], Permits: 2}, {ID: "00112233445566778899aabbccdd", Permits: 1}}
	if got := s.Leases(); !reflect.DeepEqual(got, want) {
		t.Errorf("Leases = %+v, want %+v", got, want)
	}
	if got := s.Total(); got != 5 {
		t.Errorf("Total = %d, want 5", got)
	}
}

// A string holding an integer was read as a semaphore whatever it was: a
// counter, fence's record of a key, a semaphore nobody uses. Inspect reads
// fence's records by their name and token, a semaphore by its keys or its
// waiters on its channel, and anything else holding an integer as a counter
// or a semaphore nobody uses.
func TestInspectIntegers(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inspect := func(t *testing.T, name string) State {
		t.Helper()
		s, err := Inspect(ctx, c, name)
		if err != nil {
			t.Fatal(err)
		}
		s.At = time.Time{}
		return s
	}

	f := fence.NewRedis(c)
	for i, key := range []string{"ops:0", "{acct:1}:balance", "a{b}c", "a{}b", "x}y"} {
		token := uint64(1795924132136233 + i)
		if _, err := f.Do(ctx, key, token, "INCRBY", "406"); err != nil {
			t.Fatal(err)
		}
		records, err := srv.Do("KEYS", "leasehold_fence:*").AsStrSlice()
		if err != nil || len(records) != i+1 {
			t.Fatalf("%v, %v: want %d records", records, err, i+1)
		}
		var record string
		for _, r := range records {
			if s := inspect(t, r); s.Fence == nil || s.Fence.Token != token {
				continue
			}
			record = r
		}
		want := State{Name: record, Shape: ShapeFence, Type: "string", TTL: -1, Fence: &FenceState{Resource: key, Token: token}}
		if got := inspect(t, record); !reflect.DeepEqual(got, want) {
			t.Errorf("record of %q: got %+v, want %+v", key, got, want)
		}
		want = State{Name: key, Shape: ShapeCounter, Type: "string", TTL: -1, Count: 406}
		if got := inspect(t, key); !reflect.DeepEqual(got, want) {
			t.Errorf("%q, written through fence: got %+v, want %+v", key, got, want)
		}
	}

	for name, value := range map[string]string{
		"leasehold_fence:{zero}": "0",  // not a token
		"leasehold_fence:plain":  "12", // not a name fence gives a record
		"hits":                   "-3",
	} {
		srv.Do("SET", name, value)
		n, _ := strconv.ParseInt(value, 10, 64)
		want := State{Name: name, Shape: ShapeCounter, Type: "string", TTL: -1, Count: n}
		if got := inspect(t, name); !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %s: got %+v, want %+v", name, value, got, want)
		}
	}

	// A semaphore nobody uses is its count alone: a counter by its keys.
	if ok, err := NewSemaphore("idle", Config{}).TrySetPermits(ctx, c, 3); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if got := inspect(t, "idle"); got.Shape != ShapeCounter || got.Count != 3 || got.Semaphore != nil {
		t.Errorf("idle semaphore: %+v", got)
	}
	// One set to 0 permits, with a waiter: only its channel says so.
	if ok, err := NewSemaphore("none", Config{}).TrySetPermits(ctx, c, 0); !ok || err != nil {
		t.Fatal(ok, err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Receive(sctx, c.B().Subscribe().Channel(script.KeysOf("none").SemaphoreChannel).Build(), func(rueidis.PubSubMessage) {})
	}()
	defer func() { stop(); <-done }()
	deadline := time.Now().Add(5 * time.Second)
	for n := int64(0); n == 0; n, _ = Listeners(ctx, c, script.KeysOf("none").SemaphoreChannel) {
		if time.Now().After(deadline) {
			t.Fatal("not subscribed within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	want := State{Name: "none", Shape: ShapeSemaphore, Type: "string", TTL: -1, Semaphore: &SemaphoreState{Set: true}}
	if got := inspect(t, "none"); !reflect.DeepEqual(got, want) {
		t.Errorf("semaphore of 0 with a waiter: got %+v, want %+v", got, want)
	}
	all, err := InspectAll(ctx, c, []string{"none", "idle", "hits"})
	if err != nil || len(all) != 3 || all[0].Shape != ShapeSemaphore || all[1].Shape != ShapeCounter || all[2].Shape != ShapeCounter {
		t.Errorf("InspectAll: %+v, %v", all, err)
	}
}

// fenceResource reads each of fence's three forms of a record's name (the
// odd-brace form is read from fence's own records in TestInspectIntegers),
// and no other name.
func TestFenceResource(t *testing.T) {
	for _, tt := range []struct {
		name, key string
		ok        bool
	}{
		{"leasehold_fence:{ops:0}", "ops:0", true},
		{"leasehold_fence:{acct:1}:balance", "{acct:1}:balance", true},
		{"leasehold_fence:a{b}c", "a{b}c", true},
		{"leasehold_fence:{a}:x}y", "{a}:x}y", true},
		{"leasehold_fence:plain", "", false},
		{"leasehold_fence:{}", "", false},
		{"leasehold_fence:", "", false},
		{"fence:{ops:0}", "", false},
		{"ops:0", "", false},
	} {
		if key, ok := fenceResource(tt.name); key != tt.key || ok != tt.ok {
			t.Errorf("fenceResource(%q) = %q, %v; want %q, %v", tt.name, key, ok, tt.key, tt.ok)
		}
	}
}
