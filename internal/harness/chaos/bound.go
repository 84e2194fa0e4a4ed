package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// BoundInput is what CheckBound replays: the workers' sections under a
// semaphore's permits, and what the test did to them.
type BoundInput struct {
	// Permits is the semaphore's total; Lease the workers' lease time.
	Permits  int
	Lease    time.Duration
	Sections []Section
	// Log is the resource's log: the enter writes of the last sections of
	// killed processes, which left no record, are read from it.
	Log []Accepted
	// Killed maps each process killed with kill -9 to when it was.
	Killed map[string]Mono
	// Restarts are when the semaphore's server restarted empty, its
	// permits lost with it.
	Restarts []Mono
}

// Bound is what CheckBound found.
type Bound struct {
	// Most is the most sections that held a permit at once (among those
	// of one server lifetime), and MostAt when.
	Most   int
	MostAt Mono
	// Over: moments when more sections of one server lifetime held a
	// permit than the semaphore has: the bound broken.
	Over []string
	// Carried counts sections that entered before a restart and still acted
	// after it (their permit lost with the server: the documented loss of a
	// single Redis without persistence), CarriedFor the longest any acted on.
	Carried    int
	CarriedFor time.Duration
	// Late: writes the resource took that were issued after the writer's
	// permit could have expired in Redis (past the lease's local deadline,
	// or after it was reported lost). Token 0 fences nothing: this is what
	// a semaphore cannot refuse, a holder that was paused past its lease.
	Late []string
}

// span is the time a section held its permit, as far as its holder could act.
type span struct {
	id         string
	from, to   Mono
	generation int // the server lifetime its permit was taken in
}

// CheckBound checks that never more than in.Permits sections held a permit
// at once. A section holds its permit from its entry until it stopped
// acting (its exit, or the loss of its lease) or its permit could expire in
// Redis, whichever came first: its lease's local deadline plus the drift
// margin the holder keeps (the deadline runs from when the last confirmed
// renewal was sent, less lease/50 + 2ms), less the millisecond of Redis'
// clock (a permit's expiry is TIME in whole milliseconds plus the lease, and
// it is given back once TIME reaches it: up to 1ms before the lease has run
// from the renewal; the holder's margin covers it). After that Redis may give the
// permit to another, and a write the holder issues then is Late, not a
// breach of the bound. The last section of a killed process runs from its
// enter write to the kill. Sections are counted within the server lifetime
// they entered in: after a restart the old holders' permits are gone, and
// their overlap with the new holders (until each learns of the loss at its
// next renewal) is reported as Carried.
func CheckBound(in BoundInput) *Bound {
	c := &boundCheck{in: in, b: &Bound{}}
	c.sections()
	c.killed()
	c.carried()
	c.sweep()
	return c.b
}

// boundCheck is CheckBound's replay: its input, the spans read from it, and
// the bound it fills in.
type boundCheck struct {
	in    BoundInput
	spans []span
	b     *Bound
}

// generation is the server lifetime t falls in: the restarts by then.
func (c *boundCheck) generation(t Mono) int {
	n := 0
	for _, r := range c.in.Restarts {
		if r <= t {
			n++
		}
	}
	return n
}

// sections adds the recorded sections' spans, each cut at its permit's
// possible expiry, and reports the writes issued past it as Late.
func (c *boundCheck) sections() {
	// The holder's drift margin, less the millisecond of Redis' clock.
	drift := c.in.Lease/50 + 2*time.Millisecond - time.Millisecond
	for _, s := range c.in.Sections {
		to := s.End()
		if s.Deadline != 0 && s.Deadline.Add(drift) < to {
			to = s.Deadline.Add(drift)
		}
		for _, w := range s.Writes {
			limit := to
			if s.Lost != 0 && s.Lost < limit {
				limit = s.Lost
			}
			if w.Accepted && w.Issued > limit {
				c.b.Late = append(c.b.Late, fmt.Sprintf("%s: %s write issued %v after its permit could expire was accepted",
					s.ID, w.Phase, w.Issued.Sub(limit)))
			}
		}
		c.spans = append(c.spans, span{s.ID, s.Enter, to, c.generation(s.Enter)})
	}
}

// killed adds the spans of killed processes' last sections, which left no
// record: from their enter write in the log to the kill.
func (c *boundCheck) killed() {
	recorded := make(map[string]bool, len(c.in.Sections))
	for _, s := range c.in.Sections {
		recorded[s.ID] = true
	}
	for _, e := range c.in.Log {
		at, killed := c.in.Killed[process(e.Holder)]
		if e.Phase == "enter" && killed && !recorded[e.Holder] {
			c.spans = append(c.spans, span{e.Holder + " (killed)", e.Issued, at, c.generation(e.Issued)})
		}
	}
}

// carried counts the spans that a restart fell within.
func (c *boundCheck) carried() {
	for _, s := range c.spans {
		for _, r := range c.in.Restarts {
			if s.from < r && r < s.to {
				c.b.Carried++
				c.b.CarriedFor = max(c.b.CarriedFor, s.to.Sub(r))
			}
		}
	}
}

// edge is a span's start (delta 1) or end (delta -1) in server lifetime gen.
type edge struct {
	at    Mono
	delta int
	gen   int
}

// sweep counts each server lifetime's spans in time order, an end before a
// start at the same instant, for Most and Over.
func (c *boundCheck) sweep() {
	edges := make([]edge, 0, 2*len(c.spans))
	for _, s := range c.spans {
		if s.to > s.from {
			edges = append(edges, edge{s.from, 1, s.generation}, edge{s.to, -1, s.generation})
		}
	}
	slices.SortFunc(edges, func(x, y edge) int {
		if d := cmp.Compare(x.at, y.at); d != 0 {
			return d
		}
		return cmp.Compare(x.delta, y.delta)
	})
	held := map[int]int{}
	for _, e := range edges {
		held[e.gen] += e.delta
		n := held[e.gen]
		if n > c.b.Most {
			c.b.Most, c.b.MostAt = n, e.at
		}
		if e.delta > 0 && n > c.in.Permits {
			c.b.Over = append(c.b.Over, fmt.Sprintf("at %d: %d sections held a permit of %d:%s", e.at, n, c.in.Permits, c.open(e)))
		}
	}
}

// open names the spans of e's server lifetime open at e, and how long
// before and after e each runs, to tell which sections broke the bound.
func (c *boundCheck) open(e edge) string {
	var b strings.Builder
	for _, s := range c.spans {
		if s.generation == e.gen && s.from <= e.at && e.at < s.to {
			fmt.Fprintf(&b, " %s (%v before, %v after)", s.id, e.at.Sub(s.from), s.to.Sub(e.at))
		}
	}
	return b.String()
}

// String is the bound's figures on one line.
func (b *Bound) String() string {
	return fmt.Sprintf("at most %d permits held at once, %d times over the bound; %d sections carried over a restart (for up to %v); %d late writes taken",
		b.Most, len(b.Over), b.Carried, b.CarriedFor.Round(time.Millisecond), len(b.Late))
}
