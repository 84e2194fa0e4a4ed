package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Fault is a time a fault was active: from its injection to its heal.
type Fault struct {
	Kind string
	From Mono
	// Healed is when the test undid the fault or saw it over; 0: not
	// before the run ended.
	Healed Mono
}

// Proc is a worker process as the liveness bound counts it: its waiters,
// their longest hold, and when it ran.
type Proc struct {
	ID         string
	Goroutines int
	Hold       time.Duration
	// From is when it was started, To when it exited or was killed (0:
	// it ran to the end).
	From, To Mono
}

// Rule is how a kind of lock serves its waiters, which says what bounds a
// wait.
type Rule int

const (
	// Unruled kinds state no bound: their longest wait is reported, not
	// checked (rw's writers, elections and RedLock race for the lock, and
	// so do rlock's waiters under WithReplicas, which passes nothing; a
	// semaphore's waiters too).
	Unruled Rule = iota
	// Turns is rlock's: a Client passes the lock among its goroutines for
	// a turn, at most once to each of its waiters, then yields to waiters
	// elsewhere (docs/rlock.md, "Every waiter gets its turn").
	Turns
	// FIFO is fairqueue's: waiters get the lock in the order they asked.
	FIFO
)

func (r Rule) String() string {
	switch r {
	case Turns:
		return "rlock, turns"
	case FIFO:
		return "fairqueue, FIFO"
	}
	return "no bound"
}

// The terms of the bounds, generous for a busy 2-core machine under -race.
const (
	// grantCost is what an acquisition costs beyond its hold: the
	// section's two accesses to the resource, the release, and the pass
	// or the next waiter's attempt (measured: 15 to 40ms).
	grantCost = 50 * time.Millisecond
	// yieldCost is the yield at a turn's end: its window (2ms to 50ms,
	// doubling while nobody uses it), two round trips and the message.
	yieldCost = 100 * time.Millisecond
	// missedYields is how many yields in a row waiters elsewhere may miss
	// (each doubles the next one's window) before a Client's streak of
	// acquisitions breaks the turn rule.
	missedYields = 4
	// slack multiplies a bound: scheduling on a loaded machine.
	slack = 2
)

// LiveInput is what CheckLive replays.
type LiveInput struct {
	Rule  Rule
	Waits []Wait
	// Log is the resource's log: its enter writes are the acquisitions
	// made while a waiter waited, in order.
	Log    []Accepted
	Procs  []Proc
	Faults []Fault
	// Settle is how long after its heal a fault may still hold waiters
	// up: a lock left by a holder the fault cut off runs out within its
	// lease, and Clients reconnect and subscribe again.
	Settle time.Duration
	// End is when the run ended: a fault not healed lasts until then.
	End Mono
}

// Liveness is what CheckLive found.
type Liveness struct {
	Rule Rule
	// Checked counts the waits (Acquire calls) that lay wholly outside
	// every fault's window; Exempt those that overlapped one. TryAcquire
	// calls are not waits and count in neither.
	Checked, Exempt int
	// Longest is the longest checked wait: Of names its goroutine, Bound
	// is its bound, PassedOver the acquisitions others made meanwhile.
	Longest    time.Duration
	Of         string
	Bound      time.Duration
	PassedOver int
	// Closest is the checked wait that came closest to its bound, in
	// proportion: how long it took, its bound, its goroutine.
	Closest, ClosestBound time.Duration
	ClosestOf             string
	// MostPassedOver is the most acquisitions others made during one
	// checked wait.
	MostPassedOver int
	// MostExtraTurns (Turns) is the most turns one checked wait saw
	// beyond the rule's (the turn under way, one of each other process,
	// its own Client's): a yield that waiters elsewhere missed, which
	// lengthens a Client's streak by a turn, or a race lost. MostRacesLost
	// counts the races alone: turns of a Client that had already had one
	// in the wait (its own Client's third), each won over the waiter's
	// Client when another turn ended.
	MostExtraTurns, MostRacesLost int
	// LongestInFault is the longest exempt wait.
	LongestInFault time.Duration
	// Starved: checked waits that ended past their bound, with the lock
	// or without it.
	Starved []string
	// Hogged (Turns): streaks of one Client's acquisitions, while a waiter
	// elsewhere waited, longer than its turn and the yields missedYields
	// allows.
	Hogged []string
}

// Violations lists every violation, one line each; none means live.
func (l *Liveness) Violations() []string { return append(slices.Clone(l.Starved), l.Hogged...) }

// entry is an acquisition as the resource's log shows it: when its enter
// write was issued, and by which process.
type entry struct {
	at   Mono
	proc string
}

// streak is consecutive acquisitions of one process, from the index first in
// the entries.
type streak struct {
	proc     string
	first, n int
}

// CheckLive checks that every wait (an Acquire) that lay wholly outside
// every fault's window ended within its bound (see WaitBound), with the
// lock or at its ctx deadline if that came first; under Turns, also that
// no Client held the lock longer than its turn, missedYields yields
// included, while the wait went on. A fault's window runs from its
// injection to its heal plus in.Settle.
func CheckLive(in LiveInput) *Liveness {
	l := &Liveness{Rule: in.Rule}
	var es []entry
	for _, e := range in.Log {
		if e.Phase == "enter" {
			es = append(es, entry{e.Issued, process(e.Holder)})
		}
	}
	slices.SortFunc(es, func(a, b entry) int { return cmp.Compare(a.at, b.at) })
	goroutines := make(map[string]int, len(in.Procs))
	for _, p := range in.Procs {
		goroutines[p.ID] = max(p.Goroutines, 1)
	}
	hogged := map[int]bool{} // streaks reported, by their first entry
	for _, w := range in.Waits {
		if w.Try {
			continue
		}
		took := w.Returned.Sub(w.Start)
		if in.duringFault(w) {
			l.Exempt++
			l.LongestInFault = max(l.LongestInFault, took)
			continue
		}
		l.Checked++
		// The acquisitions made in the wait: the waiter's own enter write
		// comes after it returned.
		lo, _ := slices.BinarySearchFunc(es, w.Start, func(e entry, t Mono) int { return cmp.Compare(e.at, t) })
		hi, _ := slices.BinarySearchFunc(es, w.Returned, func(e entry, t Mono) int { return cmp.Compare(e.at, t) })
		passed := hi - lo
		l.MostPassedOver = max(l.MostPassedOver, passed)
		extra := 0
		if in.Rule == Turns {
			missed, races := 0, 0
			turns := map[string]int{} // streaks, by process
			for _, r := range streaks(es, lo, hi) {
				// A streak is a turn, and a turn more for each yield
				// missed; past those it breaks the rule, and counts as
				// no more.
				g := max(goroutines[r.proc], 1)
				missed += min((r.n+g-1)/g, 1+missedYields) - 1
				turns[r.proc]++
				if r.n > (1+missedYields)*g && !hogged[r.first] {
					hogged[r.first] = true
					l.Hogged = append(l.Hogged, fmt.Sprintf("%s took the lock %d times in a row while %s waited: its turn is at most %d (its goroutines), %d with the %d yields in a row waiters elsewhere may miss",
						r.proc, r.n, w.Holder, g, (1+missedYields)*g, missedYields))
				}
			}
			for p, n := range turns {
				// One turn of each Client; two of the waiter's own: one
				// under way when it came, and the one that passes it
				// the lock.
				allowed := 1
				if p == process(w.Holder) {
					allowed = 2
				}
				races += max(n-allowed, 0)
			}
			extra = missed + races
			l.MostExtraTurns = max(l.MostExtraTurns, extra)
			l.MostRacesLost = max(l.MostRacesLost, races)
		}
		bound := WaitBound(in.Rule, in.Procs, w.Start, w.Returned, extra)
		if took > l.Longest {
			l.Longest, l.Of, l.Bound, l.PassedOver = took, w.Holder, bound, passed
		}
		l.closer(took, bound, w.Holder)
		if bound > 0 && took > bound {
			got := "then got the lock"
			if !w.Acquired {
				got = "then gave up: " + w.Err
			}
			l.Starved = append(l.Starved, fmt.Sprintf("%s waited %v, past its bound of %v (%s), while others took the lock %d times; %s",
				w.Holder, took.Round(time.Millisecond), bound.Round(time.Millisecond), in.Rule, passed, got))
		}
	}
	return l
}

// streaks splits the entries from lo to hi into streaks of one process.
func streaks(es []entry, lo, hi int) []streak {
	var out []streak
	for i := lo; i < hi; i++ {
		if n := len(out); n > 0 && out[n-1].proc == es[i].proc {
			out[n-1].n++
			continue
		}
		out = append(out, streak{es[i].proc, i, 1})
	}
	return out
}

// duringFault reports whether w overlapped a fault's window.
func (in LiveInput) duringFault(w Wait) bool {
	for _, f := range in.Faults {
		end := f.Healed
		if end == 0 {
			end = in.End
		}
		if w.Start <= end.Add(in.Settle) && w.Returned >= f.From {
			return true
		}
	}
	return false
}

// ran reports whether p ran (with waiters) at some time from start to end.
func (p Proc) ran(start, end Mono) bool {
	return p.Goroutines > 0 && p.From <= end && (p.To == 0 || p.To >= start)
}

// WaitBound is the bound under rule of a wait from start to end, given the
// processes that ran meanwhile (procs, those with waiters that ran in the
// wait); 0 when the rule states none. A process's acquisitions each take at
// most its hold and grantCost.
//
// Turns: a process's turn is its goroutines' acquisitions and a yield
// (yieldCost). A waiter waits for the turn under way, then one turn of each
// process (a round, which ends with its own Client's, in which it is
// passed the lock), the whole twice over (slack); plus, for each turn
// beyond those (extra, counted from the wait's acquisitions: a yield that
// waiters elsewhere missed, or a race its Client lost to another's waiter
// when a turn ended), one more of the longest turn, twice over.
//
// FIFO: everyone ahead of the waiter holds the lock once, at most every
// other waiter, twice over (slack).
func WaitBound(rule Rule, procs []Proc, start, end Mono, extra int) time.Duration {
	var round, longest, acquisitions time.Duration
	for _, p := range procs {
		if !p.ran(start, end) {
			continue
		}
		a := time.Duration(p.Goroutines) * (p.Hold + grantCost)
		acquisitions += a
		round += a + yieldCost
		longest = max(longest, a+yieldCost)
	}
	switch rule {
	case Turns:
		return slack * (round + time.Duration(1+extra)*longest)
	case FIFO:
		return slack * acquisitions
	}
	return 0
}

// Add adds o's figures to l's, of the same rule: counts and violations
// summed, the longest wait, the closest to its bound and the most of each
// kept.
func (l *Liveness) Add(o *Liveness) {
	l.Checked += o.Checked
	l.Exempt += o.Exempt
	l.Starved = append(l.Starved, o.Starved...)
	l.Hogged = append(l.Hogged, o.Hogged...)
	l.MostPassedOver = max(l.MostPassedOver, o.MostPassedOver)
	l.MostExtraTurns = max(l.MostExtraTurns, o.MostExtraTurns)
	l.MostRacesLost = max(l.MostRacesLost, o.MostRacesLost)
	l.LongestInFault = max(l.LongestInFault, o.LongestInFault)
	if o.Longest > l.Longest {
		l.Longest, l.Of, l.Bound, l.PassedOver = o.Longest, o.Of, o.Bound, o.PassedOver
	}
	l.closer(o.Closest, o.ClosestBound, o.ClosestOf)
}

// closer keeps the wait of who, which took took of its bound, as the
// closest to its bound if it is.
func (l *Liveness) closer(took, bound time.Duration, who string) {
	if bound > 0 && (l.ClosestBound == 0 || float64(took)/float64(bound) > float64(l.Closest)/float64(l.ClosestBound)) {
		l.Closest, l.ClosestBound, l.ClosestOf = took, bound, who
	}
}

// String is the figures on one line.
func (l *Liveness) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "liveness (%s): %d waits checked outside faults, %d during faults (longest %v)", l.Rule, l.Checked, l.Exempt,
		l.LongestInFault.Round(time.Millisecond))
	if l.Checked > 0 {
		fmt.Fprintf(&b, "; longest checked %v (%s, %d acquisitions by others meanwhile", l.Longest.Round(time.Millisecond), l.Of, l.PassedOver)
		if l.Bound > 0 {
			fmt.Fprintf(&b, ", bound %v", l.Bound.Round(time.Millisecond))
		}
		b.WriteString(")")
		if l.ClosestBound > 0 {
			fmt.Fprintf(&b, "; closest to its bound %v of %v (%s)", l.Closest.Round(time.Millisecond), l.ClosestBound.Round(time.Millisecond), l.ClosestOf)
		}
		fmt.Fprintf(&b, "; most acquisitions by others in one wait %d", l.MostPassedOver)
		if l.Rule == Turns {
			fmt.Fprintf(&b, ", most turns beyond the rule's %d (races lost %d)", l.MostExtraTurns, l.MostRacesLost)
		}
	}
	if l.Rule != Unruled {
		fmt.Fprintf(&b, "; past the bound: %d", len(l.Starved))
	}
	if l.Rule == Turns {
		fmt.Fprintf(&b, ", turns overrun: %d", len(l.Hogged))
	}
	return b.String()
}
