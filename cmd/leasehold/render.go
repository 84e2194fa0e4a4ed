package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/leasehold/leasehold/internal/lua"
)

// describe is the long name of each kind, as inspect shows it.
var describe = map[lua.Shape]string{
	lua.ShapeFree:      "free (no lock key)",
	lua.ShapeRLock:     "rlock (reentrant lock)",
	lua.ShapeFair:      "fair (fair lock, FIFO)",
	lua.ShapeRW:        "rw (read-write lock)",
	lua.ShapeElection:  "election (leader election: an rlock and its leader key)",
	lua.ShapeSemaphore: "semaphore (permits, Redisson's RPermitExpirableSemaphore)",
	lua.ShapeCounter:   "either a counter or an unused semaphore (an integer; no permit held, nobody waiting)",
	lua.ShapeFence:     "fence (package fence's record of the last token applied to a key)",
	lua.ShapeNotLock:   "not a lock",
}

// render writes s as inspect shows it. Without times it leaves out every
// duration, which changes on each look: watch compares those renderings to
// tell a change of state from the clock running.
func render(w io.Writer, s *lock, times bool) error {
	dur := func(d time.Duration) string {
		if !times {
			return "-"
		}
		return duration(d)
	}
	head := table(w, "")
	head.row("name", s.shown())
	if s.Shape == lua.ShapeNotLock {
		head.row("kind", fmt.Sprintf("not a lock (a Redis %s)", s.Type))
		return head.flush()
	}
	head.row("kind", describe[s.Shape])
	switch {
	case s.Semaphore != nil:
		return renderSemaphore(w, head, s, dur)
	case s.Shape == lua.ShapeCounter:
		head.row("value", fmt.Sprint(s.Count))
		if s.TTL >= 0 {
			head.row("ttl", dur(s.TTL))
		}
		return head.flush()
	case s.Fence != nil:
		head.row("resource", s.Fence.Resource)
		head.row("token", fmt.Sprintf("%d, the last applied to %s: a lower one is refused", s.Fence.Token, s.Fence.Resource))
		if s.TTL < 0 {
			head.row("ttl", "none: kept while "+s.Fence.Resource+" has no expiry")
		} else {
			head.row("ttl", dur(s.TTL))
		}
		return head.flush()
	}
	renderHead(head, s, dur)
	if err := head.flush(); err != nil {
		return err
	}
	if s.Held() {
		if err := renderHolders(w, s, dur); err != nil {
			return err
		}
	}
	return renderWaiters(w, s, dur)
}

// renderHead writes the rows of a lock's head below its name and kind: mode,
// leader, state, TTL, token.
func renderHead(head tab, s *lock, dur func(time.Duration) string) {
	if s.Mode != "" {
		head.row("mode", s.Mode)
	}
	if l := s.Leader; l != nil {
		head.row("leader", strconv.Quote(l.Value))
		head.row("term", fmt.Sprint(l.Term))
	}
	switch n := len(s.Holders); {
	case s.KeptBy != "":
		// Released sooner than its WithHoldAtLeast after the acquisition.
		head.row("state", "released, kept by no holder until its hold-at-least is over")
		head.row("kept until", until(s, dur))
		head.row("released by", s.KeptBy+" "+s.conn(s.KeptBy).String())
	case n == 0:
		head.row("state", "free")
	case n == 1:
		head.row("state", "held by 1 owner")
	default:
		head.row("state", fmt.Sprintf("held by %d owners", n))
	}
	if s.Held() {
		if s.TTL < 0 {
			head.row("ttl", "none: the lock never expires")
		} else {
			head.row("ttl", dur(s.TTL))
		}
	}
	if s.Token > 0 {
		head.row("token", fmt.Sprint(s.Token))
	} else {
		head.row("token", "none drawn yet")
	}
}

// renderHolders writes the table of a held lock's holders; a read-write
// lock's shows which way each holds and its read holds' TTLs.
func renderHolders(w io.Writer, s *lock, dur func(time.Duration) string) error {
	fmt.Fprintln(w, "holders")
	t := table(w, "  ")
	if s.Shape == lua.ShapeRW {
		t.row("OWNER", "AS", "HOLDS", "HOLD TTLS", "CLIENT")
	} else {
		t.row("OWNER", "HOLDS", "CLIENT")
	}
	for _, h := range s.Holders {
		client := s.conn(h.Owner).String()
		switch {
		case s.Shape != lua.ShapeRW:
			t.row(h.Owner, fmt.Sprint(h.Count), client)
		case h.Write:
			t.row(h.Owner, "write", fmt.Sprint(h.Count), "-", client) // timed by the lock's TTL
		default:
			ttls := make([]string, len(h.Reads))
			for i, d := range h.Reads {
				switch {
				case d < 0:
					ttls[i] = "no-expiry"
				case d == 0:
					ttls[i] = "expired" // its key is gone: that hold ran out
				default:
					ttls[i] = dur(d)
				}
			}
			t.row(h.Owner, "read", fmt.Sprint(h.Count), strings.Join(ttls, " "), client)
		}
	}
	return t.flush()
}

// renderWaiters writes the fair queue and the waiting writers, if any.
func renderWaiters(w io.Writer, s *lock, dur func(time.Duration) string) error {
	if s.clients > 0 {
		fmt.Fprintf(w, "waiting Clients: %d (subscribed to the lock's channel; Redis does not see how many goroutines of each wait)\n", s.clients)
	}
	if len(s.Waiters) > 0 {
		fmt.Fprintf(w, "waiters (%d, oldest first)\n", len(s.Waiters))
		t := table(w, "  ")
		t.row("#", "OWNER", "KEEPS ITS PLACE FOR", "CLIENT")
		for i, wt := range s.Waiters {
			t.row(fmt.Sprint(i+1), wt.Owner, place(wt, dur), s.conn(wt.Owner).String())
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if len(s.Writers) > 0 {
		fmt.Fprintf(w, "waiting writers (%d), holding new readers back (writer preference)\n", len(s.Writers))
		t := table(w, "  ")
		t.row("OWNER", "ANNOUNCED FOR", "CLIENT")
		for _, wt := range s.Writers {
			t.row(wt.Owner, place(wt, dur), s.conn(wt.Owner).String())
		}
		return t.flush()
	}
	return nil
}

// renderSemaphore writes the rest of a semaphore's inspect: its count, the
// permits held with their expiry, the waiters for several permits.
func renderSemaphore(w io.Writer, head tab, s *lock, dur func(time.Duration) string) error {
	sem := s.Semaphore
	if !sem.Set {
		head.row("permits", "not set: takers wait until they are (TrySetPermits)")
	} else {
		head.row("total", fmt.Sprint(sem.Total()))
		head.row("available", fmt.Sprint(sem.Available))
	}
	switch n := len(sem.Permits); {
	case n == 0:
		head.row("state", "no permit held")
	default:
		head.row("state", fmt.Sprintf("%d permits held by %d holders", n, len(sem.Leases())))
	}
	if err := head.flush(); err != nil {
		return err
	}
	if len(sem.Permits) > 0 {
		fmt.Fprintln(w, "permits (soonest expiry first)")
		t := table(w, "  ")
		t.row("PERMIT", "EXPIRES IN", "CLIENT")
		for _, p := range sem.Permits {
			client := s.permitConn(p.ID).String()
			switch {
			case p.Never:
				t.row(p.ID, "never (taken without a lease)", client)
			case p.Left <= 0:
				t.row(p.ID, "expired: given back at the next attempt", client)
			default:
				t.row(p.ID, dur(p.Left), client)
			}
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if len(sem.Claims) > 0 {
		fmt.Fprintf(w, "waiting for several permits (%d), holding smaller takers back\n", len(sem.Claims))
		t := table(w, "  ")
		t.row("OWNER:PERMITS", "CLAIMED FOR", "CLIENT")
		for _, c := range sem.Claims {
			left := dur(c.Left)
			if c.Left <= 0 {
				left = "expired: removed at the next attempt"
			}
			t.row(c.Owner, left, s.conn(c.Owner).String())
		}
		return t.flush()
	}
	return nil
}

// tab is a table of aligned columns, each line indented.
type tab struct {
	tw     *tabwriter.Writer
	indent string
}

func table(w io.Writer, indent string) tab {
	return tab{tabwriter.NewWriter(w, 0, 0, 2, ' ', 0), indent}
}

func (t tab) row(cells ...string) { fmt.Fprintln(t.tw, t.indent+strings.Join(cells, "\t")) }

func (t tab) flush() error { return t.tw.Flush() }

// until is when a kept lock is free, by the server's clock, and how long
// until then.
func until(s *lock, dur func(time.Duration) string) string {
	if d := dur(s.TTL); d != "-" {
		return s.At.Add(s.TTL).UTC().Format("15:04:05.000Z07:00") + " (in " + d + ")"
	}
	return "-"
}

// place says how long a waiter keeps its place.
func place(w lua.Waiter, dur func(time.Duration) string) string {
	switch {
	case !w.Known:
		return "no deadline: removed at the next attempt"
	case w.Left <= 0:
		return "expired: removed when it reaches the head"
	}
	return dur(w.Left)
}

// duration shows d to the millisecond, the precision Redis keeps.
func duration(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	return d.Round(time.Millisecond).String()
}

// renderList writes one line per lock, in the order given.
func renderList(w io.Writer, locks []*lock) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tMODE\tHOLDERS\tHOLDS\tTTL\tTOKEN\tWAITERS")
	for _, s := range locks {
		holders, holds := len(s.Holders), int64(0)
		for _, h := range s.Holders {
			holds += h.Count
		}
		mode, ttl, waiters := s.Mode, "-", fmt.Sprint(len(s.Waiters)+len(s.Writers))
		if s.clients >= 0 {
			// No queue in Redis: the Clients waiting, not goroutines.
			waiters = fmt.Sprintf("%d clients", s.clients)
		}
		if mode == "" {
			mode = "-"
		}
		if s.Held() || s.KeptBy != "" {
			ttl = duration(s.TTL)
			if s.TTL < 0 {
				ttl = "none"
			}
		}
		if s.KeptBy != "" {
			mode = "kept" // released, held by no one until its TTL runs out
		}
		if sem := s.Semaphore; sem != nil {
			// MODE says how many of the total are free; TTL is the soonest
			// expiry of a permit held.
			mode, ttl, waiters = fmt.Sprintf("%d/%d free", sem.Available, sem.Total()), "-", fmt.Sprint(len(sem.Claims))
			holders, holds = len(sem.Leases()), int64(len(sem.Permits))
			if len(sem.Permits) > 0 {
				ttl = "none"
				if p := sem.Permits[0]; !p.Never {
					ttl = duration(p.Left)
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%d\t%s\n",
			s.shown(), s.Shape, mode, holders, holds, ttl, s.Token, waiters)
	}
	return tw.Flush()
}
