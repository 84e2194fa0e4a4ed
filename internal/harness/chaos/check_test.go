package chaos

import (
	"testing"
	"time"
)

// ms is a Mono of n milliseconds.
func ms(n int) Mono { return Mono(time.Duration(n) * time.Millisecond) }

func sec(holder string, token uint64, enter, exit int, writes ...Write) Section {
	return Section{Holder: holder, ID: holder, Token: token, Enter: ms(enter), Exit: ms(exit), Writes: writes}
}

func wr(phase string, at int, accepted bool) Write {
	return Write{Phase: phase, Issued: ms(at), Done: ms(at), Accepted: accepted}
}

// logged is a log entry of the access holder issued at (ms).
func logged(token uint64, holder, phase string, at int) Accepted {
	return Accepted{Token: token, Holder: holder, Phase: phase, Issued: ms(at)}
}

// The checker finds each kind of violation in records made up to show it,
// and none where the fence did its job: a checker that cannot fail proves
// nothing.
func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want func(r *Report) bool
	}{
		{"sequential sections", Input{
			Sections: []Section{
				sec("p/g0", 1, 0, 10, wr("enter", 1, true), wr("exit", 9, true)),
				sec("q/g0", 2, 11, 20, wr("enter", 12, true), wr("exit", 19, true)),
			},
			Log: []Accepted{logged(1, "p/g0", "enter", 1), logged(1, "p/g0", "exit", 9), logged(2, "q/g0", "enter", 12), logged(2, "q/g0", "exit", 19)},
		}, func(r *Report) bool { return r.Overlaps == 0 && len(r.Violations()) == 0 }},
		{"overlap the fence did not stop", Input{
			Sections: []Section{
				sec("p/g0", 1, 0, 10, wr("enter", 1, true), wr("exit", 9, true)),
				sec("q/g0", 2, 5, 20, wr("enter", 12, true), wr("exit", 19, true)),
			},
			Log: []Accepted{logged(1, "p/g0", "enter", 1), logged(1, "p/g0", "exit", 9), logged(2, "q/g0", "enter", 12), logged(2, "q/g0", "exit", 19)},
		}, func(r *Report) bool { return r.Overlaps == 1 && len(r.Unguarded) == 1 }},
		{"overlap where a refusal came before it", Input{
			Sections: []Section{
				sec("p/g0", 1, 0, 10, wr("enter", 1, false), wr("exit", 9, true)),
				sec("q/g0", 2, 5, 20, wr("enter", 12, true), wr("exit", 19, true)),
			},
			Log: []Accepted{logged(1, "p/g0", "exit", 9), logged(2, "q/g0", "enter", 12), logged(2, "q/g0", "exit", 19)},
		}, func(r *Report) bool { return r.Overlaps == 1 && len(r.Unguarded) == 1 }},
		{"overlap the fence stopped", Input{
			Sections: []Section{
				sec("p/g0", 1, 0, 10, wr("enter", 1, true), wr("exit", 9, false)),
				sec("q/g0", 2, 5, 20, wr("enter", 6, true), wr("exit", 19, true)),
			},
			Log: []Accepted{logged(1, "p/g0", "enter", 1), logged(2, "q/g0", "enter", 6), logged(2, "q/g0", "exit", 19)},
		}, func(r *Report) bool { return r.Overlaps == 1 && r.Guarded == 1 && len(r.Violations()) == 0 }},
		{"a section ends when its lease is lost", Input{
			Sections: []Section{
				{Holder: "p/g0", ID: "p/g0", Token: 1, Enter: ms(0), Exit: ms(10), Lost: ms(4), Writes: []Write{wr("enter", 1, true)}},
				sec("q/g0", 2, 5, 20, wr("enter", 6, true)),
			},
			Log: []Accepted{logged(1, "p/g0", "enter", 1), logged(2, "q/g0", "enter", 6)},
		}, func(r *Report) bool { return r.Overlaps == 0 && r.Lost == 1 && len(r.Violations()) == 0 }},
		{"write after the loss accepted", Input{
			Sections: []Section{
				{Holder: "p/g0", ID: "p/g0", Token: 1, Enter: ms(0), Exit: ms(10), Lost: ms(4), Writes: []Write{wr("enter", 1, true), wr("exit", 8, true)}},
			},
			Log: []Accepted{logged(1, "p/g0", "enter", 1), logged(1, "p/g0", "exit", 8)},
		}, func(r *Report) bool { return len(r.AfterLoss) == 1 }},
		{"tokens out of order", Input{
			Log: []Accepted{logged(2, "q/g0", "enter", 0), logged(1, "p/g0", "enter", 0)},
		}, func(r *Report) bool { return len(r.Order) == 1 }},
		{"one token, two holders", Input{
			Log: []Accepted{logged(3, "q/g0", "enter", 0), logged(3, "p/g0", "enter", 0)},
		}, func(r *Report) bool { return len(r.Order) == 1 }},
		{"late waiter", Input{
			Waits:     []Wait{{Holder: "p/g0", Start: 0, Deadline: ms(100), Returned: ms(900), Err: "context deadline exceeded"}},
			WaitSlack: 500 * time.Millisecond,
		}, func(r *Report) bool { return len(r.Late) == 1 && r.WaitTimeouts == 1 }},
		{"a group's section: many accesses of each phase, each logged once", Input{
			Sections: []Section{sec("w/p3#1", 7, 0, 50, wr("enter", 1, true), wr("exit", 9, true), wr("enter", 12, true), wr("exit", 19, true))},
			Log: []Accepted{logged(7, "w/p3#1", "enter", 1), logged(7, "w/p3#1", "exit", 9),
				logged(7, "w/p3#1", "enter", 12), logged(7, "w/p3#1", "exit", 19)},
		}, func(r *Report) bool { return len(r.Violations()) == 0 && r.Writes == 4 }},
		{"a group's section: one access of many not logged", Input{
			Sections: []Section{sec("w/p3#1", 7, 0, 50, wr("enter", 1, true), wr("exit", 9, true), wr("enter", 12, true))},
			Log:      []Accepted{logged(7, "w/p3#1", "enter", 1), logged(7, "w/p3#1", "exit", 9)},
		}, func(r *Report) bool { return len(r.Mismatch) == 1 }},
		{"records and log disagree", Input{
			Sections: []Section{sec("p/g0", 1, 0, 10, wr("enter", 1, true))},
		}, func(r *Report) bool { return len(r.Mismatch) == 1 }},
		{"a killed process's last write needs no record", Input{
			Log:    []Accepted{logged(1, "p/g0", "enter", 0)},
			Killed: map[string]bool{"p": true},
		}, func(r *Report) bool { return len(r.Violations()) == 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Check(tt.in)
			if !tt.want(r) {
				t.Errorf("%v; violations: %q", r, r.Violations())
			}
		})
	}
}

// seen is a report observer o received: term token, led by owner with
// value (nobody leads when owner is empty).
func seen(o string, token uint64, owner, value string) Observed {
	return Observed{Observer: o, Token: token, Owner: owner, Value: value}
}

// The observer check finds each way an observer can be wrong, and passes
// what Observe may legitimately send: skipped terms, a new value in a term,
// a term's end then a later term.
func TestCheckObserved(t *testing.T) {
	held := []Section{
		{Holder: "p/g0", Owner: "c1:1", Token: 5},
		{Holder: "q/g0", Owner: "c2:1", Token: 7},
	}
	tests := []struct {
		name       string
		obs        []Observed
		violations int
	}{
		{"terms in order, one skipped, a new value", []Observed{
			seen("o/o0", 5, "c1:1", "p/g0"), seen("o/o0", 5, "", ""), seen("o/o0", 7, "c2:1", "q/g0"),
			seen("o/o1", 7, "c2:1", "q/g0"), seen("o/o1", 9, "c3:1", "v1"), seen("o/o1", 9, "c3:1", "v2"),
		}, 0},
		{"back a term", []Observed{seen("o/o0", 7, "c2:1", "q/g0"), seen("o/o0", 5, "c1:1", "p/g0")}, 1},
		{"the ended term again", []Observed{seen("o/o0", 5, "", ""), seen("o/o0", 5, "c1:1", "p/g0")}, 1},
		{"two leaders in a term", []Observed{seen("o/o0", 9, "c3:1", "v"), seen("o/o1", 9, "c4:1", "w")}, 1},
		{"not the section's leader", []Observed{seen("o/o0", 5, "c2:1", "p/g0")}, 1},
		{"not the section's value", []Observed{seen("o/o0", 7, "c2:1", "p/g0")}, 1},
		{"observers are checked apart", []Observed{seen("o/o0", 7, "c2:1", "q/g0"), seen("o/o1", 5, "c1:1", "p/g0")}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := CheckObserved(tt.obs, held)
			if len(o.Violations) != tt.violations {
				t.Errorf("%v, want %d violations: %q", o, tt.violations, o.Violations)
			}
		})
	}
}

// The same end to end, with worker processes that take no lock at all: with
// fresh tokens, their sections overlap and only the fence keeps the resource
// in order, refusing writes (no lock does that without faults); with one
// token for all, no fence, the overlaps go unguarded and the resource takes
// one token from many holders. Without this, a checker wired wrong (records
// lost, clocks not comparable) would pass every test.
func TestCheckCatchesNoLock(t *testing.T) {
	for _, kind := range []string{KindNone, KindNoneUnfenced} {
		t.Run(kind, func(t *testing.T) {
			srv := startServer(t)
			base := defaults(kind, "nolock", srv.Addr())
			base.Hold = 10 * time.Millisecond
			r := newRig(t, base)
			r.spawnN("w", 2, nil)
			r.progress(0, 50, 30*time.Second, "without a lock")
			r.stop()
			secs, waits, _ := r.records()
			rep := Check(Input{Sections: secs, Waits: waits, Log: r.log(), WaitSlack: waitSlack})
			t.Logf("%s: %v", kind, rep)
			switch {
			case rep.Overlaps == 0:
				t.Fatal("no overlap found without a lock")
			case kind == KindNone && rep.Refused == 0:
				t.Fatal("the fence refused nothing without a lock")
			case kind == KindNoneUnfenced && (len(rep.Unguarded) == 0 || len(rep.Order) == 0):
				t.Fatal("no unguarded overlap found without a lock or a fence")
			}
		})
	}
}
