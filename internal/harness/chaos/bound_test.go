package chaos

import (
	"testing"
	"time"
)

// The bound checker finds more holders than permits in records made up to
// show it, and counts no breach where a permit could have expired (a paused
// holder past its deadline: a late write instead), where a killed process
// left only its enter write, or across a server restart (carried over).
func TestCheckBound(t *testing.T) {
	// Sections of token 0 (a semaphore's) entered at enter, out at exit.
	s := func(id string, enter, exit int, writes ...Write) Section { return sec(id, 0, enter, exit, writes...) }
	paused := s("p/g0", 0, 100, wr("enter", 1, true), wr("exit", 90, true))
	paused.Deadline = ms(30) // its lease's deadline passed while it was stopped
	tests := []struct {
		name string
		in   BoundInput
		want func(b *Bound) bool
	}{
		{"two of two", BoundInput{Permits: 2, Sections: []Section{s("a/g0", 0, 10), s("b/g0", 5, 15), s("c/g0", 10, 20)}},
			func(b *Bound) bool { return b.Most == 2 && len(b.Over) == 0 }},
		{"three of two", BoundInput{Permits: 2, Sections: []Section{s("a/g0", 0, 10), s("b/g0", 5, 15), s("c/g0", 9, 20)}},
			func(b *Bound) bool { return b.Most == 3 && len(b.Over) == 1 }},
		{"one ends as another enters", BoundInput{Permits: 1, Sections: []Section{s("a/g0", 0, 10), s("b/g0", 10, 20)}},
			func(b *Bound) bool { return b.Most == 1 && len(b.Over) == 0 }},
		{"a paused holder: past its deadline, a late write", BoundInput{Permits: 1, Lease: time.Second,
			Sections: []Section{paused, s("q/g0", 60, 70)}},
			func(b *Bound) bool { return len(b.Over) == 0 && len(b.Late) == 1 }},
		{"a paused holder counted to its deadline", BoundInput{Permits: 1, Lease: time.Second,
			Sections: []Section{paused, s("q/g0", 20, 70)}},
			func(b *Bound) bool { return len(b.Over) == 1 }},
		{"a killed holder until the kill", BoundInput{Permits: 1, Sections: []Section{s("q/g0", 50, 70)},
			Log:    []Accepted{{Holder: "k/g0#1", Phase: "enter", Issued: ms(10)}},
			Killed: map[string]Mono{"k": ms(60)}},
			func(b *Bound) bool { return len(b.Over) == 1 }},
		{"a killed holder gone before", BoundInput{Permits: 1, Sections: []Section{s("q/g0", 50, 70)},
			Log:    []Accepted{{Holder: "k/g0#1", Phase: "enter", Issued: ms(10)}},
			Killed: map[string]Mono{"k": ms(40)}},
			func(b *Bound) bool { return len(b.Over) == 0 && b.Most == 1 }},
		{"carried over a restart", BoundInput{Permits: 1, Sections: []Section{s("a/g0", 0, 30), s("b/g0", 25, 40)},
			Restarts: []Mono{ms(20)}},
			func(b *Bound) bool { return len(b.Over) == 0 && b.Carried == 1 && b.CarriedFor == 10*time.Millisecond }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if b := CheckBound(tt.in); !tt.want(b) {
				t.Errorf("%v; over %v; late %v", b, b.Over, b.Late)
			}
		})
	}
}
