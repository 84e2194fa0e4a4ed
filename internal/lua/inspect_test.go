package lua

import (
	"context"
	"encoding/hex"
	"reflect"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/harness/redistest"
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
