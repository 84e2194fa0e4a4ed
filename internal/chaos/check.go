package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Input is what Check replays: the workers' records and the resource's log.
type Input struct {
	Sections []Section
	Waits    []Wait
	Log      []Accepted
	// Killed holds the processes killed with kill -9: their last section
	// left no record, so log entries of theirs need none.
	Killed map[string]bool
	// WaitSlack is how late after its ctx deadline an Acquire may return
	// (scheduling on a loaded machine) before it counts as late.
	WaitSlack time.Duration
}

// Report is what Check found: figures, and the violations of each property.
type Report struct {
	Acquisitions int // critical sections checked
	Waits        int // Acquire calls checked
	WaitTimeouts int // of which ended by their ctx deadline
	Writes       int // writes to the resource
	Refused      int // of which the fence refused
	Lost         int // sections whose lease was lost while held
	// Overlaps counts pairs of critical sections that overlapped in time;
	// Guarded those where the fence refused the holder of the lower token.
	Overlaps, Guarded int
	// MaxWaitOverrun is the latest an Acquire returned after its deadline.
	MaxWaitOverrun time.Duration

	// Unguarded: sections overlapping in time while the fence refused
	// neither holder: mutual exclusion broken.
	Unguarded []string
	// Order: the resource accepted tokens out of order, or one token from
	// two holders.
	Order []string
	// Late: Acquire calls that returned well after their ctx deadline.
	Late []string
	// AfterLoss: writes issued after the lease was lost that the resource
	// took.
	AfterLoss []string
	// Mismatch: the records and the resource's log disagree.
	Mismatch []string
}

// Violations lists every violation, one line each; none means safe.
func (r *Report) Violations() []string {
	var out []string
	for _, v := range [][]string{r.Unguarded, r.Order, r.Late, r.AfterLoss, r.Mismatch} {
		out = append(out, v...)
	}
	return out
}

// String is the report's figures on one line.
func (r *Report) String() string {
	return fmt.Sprintf("%d acquisitions, %d waits (%d timed out, latest %v past its deadline), %d writes (%d refused by the fence), "+
		"%d leases lost, %d overlaps (%d guarded by the fence, %d unguarded), %d violations",
		r.Acquisitions, r.Waits, r.WaitTimeouts, r.MaxWaitOverrun.Round(time.Millisecond), r.Writes, r.Refused,
		r.Lost, r.Overlaps, r.Guarded, len(r.Unguarded), len(r.Violations()))
}

// Check replays in and checks four properties:
//
//  1. no two critical sections overlap in time unless the fence refused a
//     write that the one with the lower token issued during the overlap (the
//     later holder's token made the earlier holder's write fail); a section
//     ends at its exit or at the loss of its lease, whichever came first;
//  2. the resource accepted tokens in non-decreasing order, each token from
//     one holder only: strictly increasing from one holder to the next;
//  3. every Acquire returned by its ctx deadline (plus WaitSlack);
//  4. no write issued after its lease was lost was accepted.
//
// It also checks that the records and the resource's log agree.
func Check(in Input) *Report {
	r := &Report{Acquisitions: len(in.Sections), Waits: len(in.Waits)}
	secs := slices.Clone(in.Sections)
	slices.SortFunc(secs, func(a, b Section) int { return cmp.Compare(a.Enter, b.Enter) })

	// refused reports whether the fence refused a write of s issued once
	// the overlap had begun, at from.
	refused := func(s *Section, from Mono) bool {
		for _, w := range s.Writes {
			if !w.Accepted && w.Err == "" && w.Issued >= from {
				return true
			}
		}
		return false
	}
	for i := range secs {
		a := &secs[i]
		if a.Lost != 0 {
			r.Lost++
		}
		for _, w := range a.Writes {
			r.Writes++
			if !w.Accepted && w.Err == "" {
				r.Refused++
			}
			// 4. The lease was lost before the write was issued, and yet
			// the resource took it.
			if a.Lost != 0 && w.Issued > a.Lost && w.Accepted {
				r.AfterLoss = append(r.AfterLoss, fmt.Sprintf("%s token %d: %s write issued %v after its lease was lost was accepted",
					a.ID, a.Token, w.Phase, w.Issued.Sub(a.Lost)))
			}
		}
		// 1. Sections are sorted by entry: every later one that entered
		// before a ended overlaps it.
		for j := i + 1; j < len(secs) && secs[j].Enter < a.End(); j++ {
			b := &secs[j]
			r.Overlaps++
			lower := a
			if b.Token < a.Token {
				lower = b
			}
			if a.Token != b.Token && refused(lower, b.Enter) {
				r.Guarded++
				continue
			}
			r.Unguarded = append(r.Unguarded, fmt.Sprintf("%s token %d [%d, %d] and %s token %d [%d, %d] overlap by %v; the fence refused neither",
				a.ID, a.Token, a.Enter, a.End(), b.ID, b.Token, b.Enter, b.End(), a.End().Sub(b.Enter)))
		}
	}

	// 2. The resource's order. Writes are logged under their section's
	// name, so a token handed to two sections shows.
	holderOf := make(map[uint64]string)
	var high uint64
	for i, e := range in.Log {
		if e.Token < high {
			r.Order = append(r.Order, fmt.Sprintf("log entry %d: token %d accepted after %d", i, e.Token, high))
		}
		high = max(high, e.Token)
		if h, ok := holderOf[e.Token]; ok && h != e.Holder {
			r.Order = append(r.Order, fmt.Sprintf("log entry %d: token %d accepted from sections %s and %s", i, e.Token, h, e.Holder))
		}
		holderOf[e.Token] = e.Holder
	}

	// The records and the log agree: each accepted write is logged once,
	// and each logged write was recorded, unless its process was killed.
	type key struct {
		token     uint64
		id, phase string
	}
	logged := make(map[key]int)
	for _, e := range in.Log {
		logged[key{e.Token, e.Holder, e.Phase}]++
	}
	for _, s := range secs {
		for _, w := range s.Writes {
			k := key{s.Token, s.ID, w.Phase}
			switch {
			case w.Accepted && logged[k] != 1:
				r.Mismatch = append(r.Mismatch, fmt.Sprintf("%s token %d: accepted %s write logged %d times", s.ID, s.Token, w.Phase, logged[k]))
			case !w.Accepted && w.Err == "" && logged[k] != 0:
				r.Mismatch = append(r.Mismatch, fmt.Sprintf("%s token %d: refused %s write is in the log", s.ID, s.Token, w.Phase))
			}
			delete(logged, k)
		}
	}
	for k := range logged {
		// A write whose reply was lost (an error) may have been taken;
		// a killed process's last section left no record.
		if !in.Killed[process(k.id)] && !erred(secs, k.token, k.id, k.phase) {
			r.Mismatch = append(r.Mismatch, fmt.Sprintf("%s token %d: logged %s write has no record", k.id, k.token, k.phase))
		}
	}

	// 3. Waiters return by their deadline.
	for _, w := range in.Waits {
		if !w.Acquired && strings.Contains(w.Err, "deadline exceeded") {
			r.WaitTimeouts++
		}
		over := w.Returned.Sub(w.Deadline)
		r.MaxWaitOverrun = max(r.MaxWaitOverrun, over)
		if over > in.WaitSlack {
			r.Late = append(r.Late, fmt.Sprintf("%s: Acquire returned %v after its deadline (%s)", w.Holder, over, w.Err))
		}
	}
	return r
}

// erred reports whether the write of section id under token in phase got an
// error rather than an answer.
func erred(secs []Section, token uint64, id, phase string) bool {
	for _, s := range secs {
		if s.Token != token || s.ID != id {
			continue
		}
		for _, w := range s.Writes {
			if w.Phase == phase && w.Err != "" {
				return true
			}
		}
	}
	return false
}

// process is the process part of a holder or section name, PROCESS/gN[#M].
func process(holder string) string {
	if i := strings.LastIndexByte(holder, '/'); i >= 0 {
		return holder[:i]
	}
	return holder
}

// Observation is what CheckObserved found: figures, and the violations.
type Observation struct {
	Observers int // Observe channels
	Reports   int // reports received on them
	Terms     int // distinct terms reported with a leader
	Nobody    int // reports that nobody leads
	// Violations: an observer went back a term, a term was reported with
	// two leaders, or a leader other than the one that held the term.
	Violations []string
}

// String is the observation's figures on one line.
func (o *Observation) String() string {
	return fmt.Sprintf("%d observers, %d reports (%d terms with a leader, %d of nobody leading), %d violations",
		o.Observers, o.Reports, o.Terms, o.Nobody, len(o.Violations))
}

// CheckObserved checks the reports election observers received (each
// observer's in the order received) against each other and the sections:
//
//  1. an observer's reports never go back a term: tokens are non-decreasing,
//     and after a report that nobody leads since term T comes a later term;
//  2. every report of a term, from every observer, names one leader: the
//     owner of the section that held the term, with its value (the holder's
//     name), when that section was recorded.
func CheckObserved(obs []Observed, secs []Section) *Observation {
	o := &Observation{Reports: len(obs)}
	held := make(map[uint64]*Section)
	for i := range secs {
		held[secs[i].Token] = &secs[i]
	}
	last := make(map[string]Observed) // by observer
	leaders := make(map[uint64]Observed)
	for _, b := range obs {
		a, seen := last[b.Observer]
		last[b.Observer] = b
		if !seen {
			o.Observers++
		}
		switch {
		case seen && b.Token < a.Token:
			o.Violations = append(o.Violations, fmt.Sprintf("%s: term %d reported after term %d", b.Observer, b.Token, a.Token))
		case seen && a.Owner == "" && b.Token == a.Token:
			o.Violations = append(o.Violations, fmt.Sprintf("%s: term %d reported after nobody led since term %d", b.Observer, b.Token, a.Token))
		}
		if b.Owner == "" {
			o.Nobody++
			continue
		}
		if l, ok := leaders[b.Token]; !ok {
			leaders[b.Token] = b
		} else if l.Owner != b.Owner {
			o.Violations = append(o.Violations, fmt.Sprintf("term %d reported with leader %s (%s) by %s and %s (%s) by %s",
				b.Token, l.Owner, l.Value, l.Observer, b.Owner, b.Value, b.Observer))
		}
		if s := held[b.Token]; s != nil && (s.Owner != b.Owner || s.Holder != b.Value) {
			o.Violations = append(o.Violations, fmt.Sprintf("%s: term %d reported with leader %s (%s), held by %s (%s)",
				b.Observer, b.Token, b.Owner, b.Value, s.Owner, s.Holder))
		}
	}
	o.Terms = len(leaders)
	return o
}
