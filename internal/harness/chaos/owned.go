package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Run is one fn of a partition group as CheckOwned counts it: partition
// Part run by process Proc from Enter to End, when it stopped acting (fn
// returned or its lease was lost: Section.End), or when the process was
// killed.
type Run struct {
	Part       int
	Proc, ID   string
	Enter, End Mono
}

// GroupFault is a fault a partition group test injected, and whom it
// struck: the member processes Victims, or Every member (a restart of
// Redis: what ran before it ran without a lock after it). A fault that
// struck nobody (a graceful failover) has neither.
type GroupFault struct {
	Fault
	Victims []string
	Every   bool
}

// struck reports whether f struck the process proc.
func (f GroupFault) struck(proc string) bool { return f.Every || slices.Contains(f.Victims, proc) }

// OwnedInput is what CheckOwned replays.
type OwnedInput struct {
	Parts  int // the group's partitions, 0 to Parts-1
	Runs   []Run
	Faults []GroupFault
	// Bound is how soon after a fault heals every partition must be run
	// again; and, for a fault that struck members (Victims), how soon
	// after the fault the others must run their partitions.
	Bound time.Duration
	// Gap is the longest a partition may be run nowhere outside the
	// faults (from a fault to Bound past its heal): a handover.
	Gap time.Duration
	// End is when the test began stopping the members: what comes after
	// is not checked.
	End Mono
}

// Takeover is what a fault did to a group: how soon its partitions were
// all run again.
type Takeover struct {
	Kind string
	// Victims is how many member processes the fault struck (-1: every one).
	Victims int
	// Taken is the time from the fault to the first moment every
	// partition was run by a member it spared, or again by one it struck
	// (only for faults that struck members, Victims > 0); -1 if that never
	// came before the end.
	Taken time.Duration
	// Again is the time from the heal to the first moment every partition
	// was run (0 when they all ran at the heal); -1 if that never came.
	Again time.Duration
	// Stalled is the longest a partition was run nowhere from the fault
	// to Bound after its heal, or to the next fault if it came first.
	Stalled time.Duration
}

// Ownership is what CheckOwned found.
type Ownership struct {
	Parts, Runs int
	Takeovers   []Takeover
	// LongestGap is the longest time a partition was run nowhere outside
	// the faults; GapOf says which, and when from the first moment all
	// were run.
	LongestGap time.Duration
	GapOf      string
	// Violations: a fault after which the partitions were not all run
	// again within the bound, a gap outside the faults longer than Gap.
	Violations []string
}

// String is the figures on one line.
func (o *Ownership) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ownership: %d partitions, %d fns; ", o.Parts, o.Runs)
	for i, t := range o.Takeovers {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: ", t.Kind)
		if t.Victims > 0 {
			fmt.Fprintf(&b, "taken over %s, ", after(t.Taken, "it"))
		}
		fmt.Fprintf(&b, "all run %s, one run nowhere for %v at most", after(t.Again, "the heal"), t.Stalled.Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "; longest run nowhere outside the faults %v", o.LongestGap.Round(time.Millisecond))
	if o.GapOf != "" {
		fmt.Fprintf(&b, " (%s)", o.GapOf)
	}
	fmt.Fprintf(&b, "; %d violations", len(o.Violations))
	return b.String()
}

// after says d after what, or never for -1.
func after(d time.Duration, what string) string {
	if d < 0 {
		return "never after " + what
	}
	return d.Round(time.Millisecond).String() + " after " + what
}

// stretch is a stretch of time, from to to (to excluded).
type stretch struct{ from, to Mono }

// CheckOwned checks that a partition group's partitions are run, from the
// records of its fns (on CLOCK_MONOTONIC):
//
//  1. after each fault heals, every partition is run again within Bound;
//     after a fault that struck members, the others run every partition
//     within Bound of the fault. A run of a struck member that began
//     before the fault counts as over at the fault (a paused member's
//     records say it ran on; it did not);
//  2. outside the faults (from each fault to Bound after its heal), no
//     partition is run nowhere for longer than Gap, from the first moment
//     every partition ran to End.
func CheckOwned(in OwnedInput) *Ownership {
	o := &Ownership{Parts: in.Parts, Runs: len(in.Runs)}
	held := make([][]stretch, in.Parts) // when each partition was run, merged
	for _, r := range in.Runs {
		end := r.End
		for _, f := range in.Faults {
			if f.struck(r.Proc) && r.Enter < f.From && f.From < end {
				end = f.From
			}
		}
		if r.Part >= 0 && r.Part < in.Parts && r.Enter < end {
			held[r.Part] = append(held[r.Part], stretch{r.Enter, end})
		}
	}
	var starts []Mono // every moment a partition began to be run
	for p := range held {
		held[p] = merge(held[p])
		for _, s := range held[p] {
			starts = append(starts, s.from)
		}
	}
	slices.Sort(starts)
	// whole is the first moment from t on, before End, at which every
	// partition is run: t, or a moment one began to be run.
	whole := func(t Mono) (Mono, bool) {
		if t < in.End && allRun(held, t) {
			return t, true
		}
		i, _ := slices.BinarySearch(starts, t)
		for ; i < len(starts) && starts[i] < in.End; i++ {
			if allRun(held, starts[i]) {
				return starts[i], true
			}
		}
		return 0, false
	}
	first, ok := whole(0)
	if !ok {
		o.Violations = append(o.Violations, fmt.Sprintf("the %d partitions were never all run at once", in.Parts))
		return o
	}
	var windows []stretch
	faults := slices.Clone(in.Faults)
	slices.SortFunc(faults, func(a, b GroupFault) int { return cmp.Compare(a.From, b.From) })
	for i, f := range faults {
		healed := f.Healed
		if healed == 0 || healed > in.End {
			healed = in.End
		}
		windows = append(windows, stretch{f.From, healed.Add(in.Bound)})
		t := Takeover{Kind: f.Kind, Victims: len(f.Victims)}
		if f.Every {
			t.Victims = -1
		}
		if t.Victims > 0 {
			at, ok := whole(f.From)
			t.Taken = -1
			if ok {
				t.Taken = at.Sub(f.From)
			}
			if !ok || t.Taken > in.Bound {
				o.Violations = append(o.Violations, fmt.Sprintf("%s (%s): %s", f.Kind, strings.Join(f.Victims, ", "), late(at, ok, f.From, in.Bound, "the fault")))
			}
		}
		at, ok := whole(healed)
		t.Again = -1
		if ok {
			t.Again = at.Sub(healed)
		}
		if healed < in.End && (!ok || t.Again > in.Bound) {
			o.Violations = append(o.Violations, fmt.Sprintf("%s: %s", f.Kind, late(at, ok, healed, in.Bound, "its heal")))
		}
		until := healed.Add(in.Bound)
		if i+1 < len(faults) {
			until = min(until, faults[i+1].From)
		}
		for _, ss := range held {
			for _, g := range gaps(ss, first, in.End) {
				t.Stalled = max(t.Stalled, min(g.to, until).Sub(max(g.from, f.From)))
			}
		}
		o.Takeovers = append(o.Takeovers, t)
	}
	for p, ss := range held {
		for _, g := range outside(gaps(ss, first, in.End), windows) {
			d := g.to.Sub(g.from)
			if d > o.LongestGap {
				o.LongestGap, o.GapOf = d, fmt.Sprintf("partition %d, %v in", p, g.from.Sub(first).Round(time.Millisecond))
			}
			if d > in.Gap {
				o.Violations = append(o.Violations, fmt.Sprintf("partition %d was run nowhere for %v from %v in, outside the faults (a handover: at most %v)",
					p, d.Round(time.Millisecond), g.from.Sub(first).Round(time.Millisecond), in.Gap))
			}
		}
	}
	return o
}

// late says how late the partitions were all run again after from.
func late(at Mono, ok bool, from Mono, bound time.Duration, what string) string {
	if !ok {
		return fmt.Sprintf("the partitions were not all run again after %s before the test ended (bound %v)", what, bound)
	}
	return fmt.Sprintf("the partitions were all run again %v after %s, past the bound of %v", at.Sub(from).Round(time.Millisecond), what, bound)
}

// merge sorts ss and joins those that overlap or touch.
func merge(ss []stretch) []stretch {
	slices.SortFunc(ss, func(a, b stretch) int { return cmp.Compare(a.from, b.from) })
	var out []stretch
	for _, s := range ss {
		if n := len(out); n > 0 && s.from <= out[n-1].to {
			out[n-1].to = max(out[n-1].to, s.to)
			continue
		}
		out = append(out, s)
	}
	return out
}

// allRun reports whether every partition is run at t.
func allRun(held [][]stretch, t Mono) bool {
	for _, ss := range held {
		i, _ := slices.BinarySearchFunc(ss, t, func(s stretch, t Mono) int {
			switch {
			case s.to <= t:
				return -1
			case s.from > t:
				return 1
			}
			return 0
		})
		if i == len(ss) || ss[i].from > t || ss[i].to <= t {
			return false
		}
	}
	return true
}

// gaps are the stretches from from to to that the merged stretches ss leave.
func gaps(ss []stretch, from, to Mono) []stretch {
	var out []stretch
	at := from
	for _, s := range ss {
		if s.to <= at {
			continue
		}
		if s.from >= to {
			break
		}
		if s.from > at {
			out = append(out, stretch{at, s.from})
		}
		at = max(at, s.to)
	}
	if at < to {
		out = append(out, stretch{at, to})
	}
	return out
}

// outside cuts the windows out of the gaps: what is left of each.
func outside(gs, windows []stretch) []stretch {
	for _, w := range windows {
		var next []stretch
		for _, g := range gs {
			if w.to <= g.from || w.from >= g.to {
				next = append(next, g)
				continue
			}
			if g.from < w.from {
				next = append(next, stretch{g.from, w.from})
			}
			if w.to < g.to {
				next = append(next, stretch{w.to, g.to})
			}
		}
		gs = next
	}
	return gs
}
