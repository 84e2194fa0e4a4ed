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
	c := &checker{in: in, r: &Report{Acquisitions: len(in.Sections), Waits: len(in.Waits)}}
	c.secs = slices.Clone(in.Sections)
	slices.SortFunc(c.secs, func(a, b Section) int { return cmp.Compare(a.Enter, b.Enter) })
	for i := range c.secs {
		c.writes(&c.secs[i])
		c.overlaps(i)
	}
	c.order()
	c.agree()
	c.waits()
	return c.r
}

// checker is Check's replay: its input, the sections sorted by entry, and
// the report it fills in.
type checker struct {
	in   Input
	secs []Section
	r    *Report
}

// writes counts a's loss and writes, and checks property 4: the lease was
// lost before a write was issued, and yet the resource took it.
func (c *checker) writes(a *Section) {
	if a.Lost != 0 {
		c.r.Lost++
	}
	for _, w := range a.Writes {
		c.r.Writes++
		if !w.Accepted && w.Err == "" {
			c.r.Refused++
		}
		if a.Lost != 0 && w.Issued > a.Lost && w.Accepted {
			c.r.AfterLoss = append(c.r.AfterLoss, fmt.Sprintf("%s token %d: %s write issued %v after its lease was lost was accepted",
				a.ID, a.Token, w.Phase, w.Issued.Sub(a.Lost)))
		}
	}
}

// overlaps checks property 1 for section i. Sections are sorted by entry:
// every later one that entered before it ended overlaps it.
func (c *checker) overlaps(i int) {
	a := &c.secs[i]
	for j := i + 1; j < len(c.secs) && c.secs[j].Enter < a.End(); j++ {
		b := &c.secs[j]
		c.r.Overlaps++
		lower := a
		if b.Token < a.Token {
			lower = b
		}
		if a.Token != b.Token && refusedSince(lower, b.Enter) {
			c.r.Guarded++
			continue
		}
		c.r.Unguarded = append(c.r.Unguarded, fmt.Sprintf("%s token %d [%d, %d] and %s token %d [%d, %d] overlap by %v; the fence refused neither",
			a.ID, a.Token, a.Enter, a.End(), b.ID, b.Token, b.Enter, b.End(), a.End().Sub(b.Enter)))
	}
}

// refusedSince reports whether the fence refused a write of s issued once
// the overlap had begun, at from.
func refusedSince(s *Section, from Mono) bool {
	for _, w := range s.Writes {
		if !w.Accepted && w.Err == "" && w.Issued >= from {
			return true
		}
	}
	return false
}

// order checks property 2, the resource's order. Writes are logged under
// their section's name, so a token handed to two sections shows.
func (c *checker) order() {
	holderOf := make(map[uint64]string)
	var high uint64
	for i, e := range c.in.Log {
		if e.Token < high {
			c.r.Order = append(c.r.Order, fmt.Sprintf("log entry %d: token %d accepted after %d", i, e.Token, high))
		}
		high = max(high, e.Token)
		if h, ok := holderOf[e.Token]; ok && h != e.Holder {
			c.r.Order = append(c.r.Order, fmt.Sprintf("log entry %d: token %d accepted from sections %s and %s", i, e.Token, h, e.Holder))
		}
		holderOf[e.Token] = e.Holder
	}
}

// logKey names a logged write: its token, section, phase and the time it
// was issued, which tells apart the many accesses of a partition group's
// section.
type logKey struct {
	token     uint64
	id, phase string
	issued    Mono
}

// keyOf is the key of e.
func keyOf(e Accepted) logKey { return logKey{e.Token, e.Holder, e.Phase, e.Issued} }

// agree checks that the records and the log agree: each accepted write is
// logged once, and each logged write was recorded, unless its process was
// killed.
func (c *checker) agree() {
	logged := make(map[logKey]int)
	for _, e := range c.in.Log {
		logged[keyOf(e)]++
	}
	for _, s := range c.secs {
		for _, w := range s.Writes {
			k := logKey{s.Token, s.ID, w.Phase, w.Issued}
			switch {
			case w.Accepted && logged[k] != 1:
				c.r.Mismatch = append(c.r.Mismatch, fmt.Sprintf("%s token %d: accepted %s write logged %d times", s.ID, s.Token, w.Phase, logged[k]))
			case !w.Accepted && w.Err == "" && logged[k] != 0:
				c.r.Mismatch = append(c.r.Mismatch, fmt.Sprintf("%s token %d: refused %s write is in the log", s.ID, s.Token, w.Phase))
			}
			delete(logged, k)
		}
	}
	for k := range logged {
		// A write whose reply was lost (an error) may have been taken;
		// a killed process's last section left no record.
		if !c.in.Killed[process(k.id)] && !erred(c.secs, k) {
			c.r.Mismatch = append(c.r.Mismatch, fmt.Sprintf("%s token %d: logged %s write has no record", k.id, k.token, k.phase))
		}
	}
}

// waits checks property 3: waiters return by their deadline.
func (c *checker) waits() {
	for _, w := range c.in.Waits {
		if !w.Acquired && strings.Contains(w.Err, "deadline exceeded") {
			c.r.WaitTimeouts++
		}
		over := w.Returned.Sub(w.Deadline)
		c.r.MaxWaitOverrun = max(c.r.MaxWaitOverrun, over)
		if over > c.in.WaitSlack {
			c.r.Late = append(c.r.Late, fmt.Sprintf("%s: Acquire returned %v after its deadline (%s)", w.Holder, over, w.Err))
		}
	}
}

// erred reports whether the write k names got an error rather than an
// answer.
func erred(secs []Section, k logKey) bool {
	for _, s := range secs {
		if s.Token != k.token || s.ID != k.id {
			continue
		}
		for _, w := range s.Writes {
			if w.Phase == k.phase && w.Issued == k.issued && w.Err != "" {
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
