package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// describe is the long name of each kind, as inspect shows it.
var describe = map[kind]string{
	kindFree:      "free (no lock key)",
	kindRLock:     "rlock (reentrant lock)",
	kindFair:      "fair (fair lock, FIFO)",
	kindRW:        "rw (read-write lock)",
	kindElection:  "election (leader election: an rlock and its leader key)",
	kindSemaphore: "semaphore (permits, Redisson's RPermitExpirableSemaphore)",
	kindNotLock:   "not a lock",
}

// render writes s as inspect shows it. Without times it leaves out every
// duration, which changes on each look: watch compares those renderings to
// tell a change of state from the clock running.
func render(w io.Writer, s *lockState, times bool) error {
	dur := func(d time.Duration) string {
		if !times {
			return "-"
		}
		return duration(d)
	}
	head := table(w, "")
	head.row("name", s.name)
	if s.kind == kindNotLock {
		head.row("kind", fmt.Sprintf("not a lock (a Redis %s)", s.redis))
		return head.flush()
	}
	head.row("kind", describe[s.kind])
	if s.sem != nil {
		return renderSemaphore(w, head, s.sem, dur)
	}
	if s.mode != "" {
		head.row("mode", s.mode)
	}
	if l := s.leader; l != nil {
		head.row("leader", strconv.Quote(l.value))
		head.row("term", fmt.Sprint(l.term))
	}
	switch n := len(s.holders); {
	case n == 0:
		head.row("state", "free")
	case n == 1:
		head.row("state", "held by 1 owner")
	default:
		head.row("state", fmt.Sprintf("held by %d owners", n))
	}
	if s.held() {
		if s.ttl < 0 {
			head.row("ttl", "none: the lock never expires")
		} else {
			head.row("ttl", dur(s.ttl))
		}
	}
	if s.token > 0 {
		head.row("token", fmt.Sprint(s.token))
	} else {
		head.row("token", "none drawn yet")
	}
	if err := head.flush(); err != nil {
		return err
	}

	if s.held() {
		fmt.Fprintln(w, "holders")
		t := table(w, "  ")
		if s.kind == kindRW {
			t.row("OWNER", "AS", "HOLDS", "HOLD TTLS", "CLIENT")
		} else {
			t.row("OWNER", "HOLDS", "CLIENT")
		}
		for _, h := range s.holders {
			switch {
			case s.kind != kindRW:
				t.row(h.owner, fmt.Sprint(h.count), h.client.String())
			case h.write:
				t.row(h.owner, "write", fmt.Sprint(h.count), "-", h.client.String()) // timed by the lock's TTL
			default:
				ttls := make([]string, len(h.reads))
				for i, d := range h.reads {
					switch {
					case d < 0:
						ttls[i] = "no-expiry"
					case d == 0:
						ttls[i] = "expired" // its key is gone: that hold ran out
					default:
						ttls[i] = dur(d)
					}
				}
				t.row(h.owner, "read", fmt.Sprint(h.count), strings.Join(ttls, " "), h.client.String())
			}
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if len(s.waiters) > 0 {
		fmt.Fprintf(w, "waiters (%d, oldest first)\n", len(s.waiters))
		t := table(w, "  ")
		t.row("#", "OWNER", "KEEPS ITS PLACE FOR", "CLIENT")
		for i, wt := range s.waiters {
			t.row(fmt.Sprint(i+1), wt.owner, place(wt, dur), wt.client.String())
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if len(s.writers) > 0 {
		fmt.Fprintf(w, "waiting writers (%d), holding new readers back (writer preference)\n", len(s.writers))
		t := table(w, "  ")
		t.row("OWNER", "ANNOUNCED FOR", "CLIENT")
		for _, wt := range s.writers {
			t.row(wt.owner, place(wt, dur), wt.client.String())
		}
		return t.flush()
	}
	return nil
}

// renderSemaphore writes the rest of a semaphore's inspect: its count, the
// permits held with their expiry, the waiters for several permits.
func renderSemaphore(w io.Writer, head tab, s *semState, dur func(time.Duration) string) error {
	if !s.set {
		head.row("permits", "not set: takers wait until they are (TrySetPermits)")
	} else {
		head.row("total", fmt.Sprint(s.total()))
		head.row("available", fmt.Sprint(s.available))
	}
	switch n := len(s.permits); {
	case n == 0:
		head.row("state", "no permit held")
	default:
		head.row("state", fmt.Sprintf("%d permits held by %d holders", n, s.holders()))
	}
	if err := head.flush(); err != nil {
		return err
	}
	if len(s.permits) > 0 {
		fmt.Fprintln(w, "permits (soonest expiry first)")
		t := table(w, "  ")
		t.row("PERMIT", "EXPIRES IN", "CLIENT")
		for _, p := range s.permits {
			switch {
			case p.never:
				t.row(p.id, "never (taken without a lease)", p.client.String())
			case p.left <= 0:
				t.row(p.id, "expired: given back at the next attempt", p.client.String())
			default:
				t.row(p.id, dur(p.left), p.client.String())
			}
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if len(s.claims) > 0 {
		fmt.Fprintf(w, "waiting for several permits (%d), holding smaller takers back\n", len(s.claims))
		t := table(w, "  ")
		t.row("OWNER:PERMITS", "CLAIMED FOR", "CLIENT")
		for _, c := range s.claims {
			left := dur(c.left)
			if c.left <= 0 {
				left = "expired: removed at the next attempt"
			}
			t.row(c.owner, left, c.client.String())
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

// place says how long a waiter keeps its place.
func place(w waiter, dur func(time.Duration) string) string {
	switch {
	case !w.known:
		return "no deadline: removed at the next attempt"
	case w.left <= 0:
		return "expired: removed when it reaches the head"
	}
	return dur(w.left)
}

// duration shows d to the millisecond, the precision Redis keeps.
func duration(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	return d.Round(time.Millisecond).String()
}

// renderList writes one line per lock, in the order given.
func renderList(w io.Writer, states []*lockState) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tMODE\tHOLDERS\tHOLDS\tTTL\tTOKEN\tWAITERS")
	for _, s := range states {
		holders, holds := len(s.holders), int64(0)
		for _, h := range s.holders {
			holds += h.count
		}
		mode, ttl, waiters := s.mode, "-", len(s.waiters)+len(s.writers)
		if mode == "" {
			mode = "-"
		}
		if s.held() {
			ttl = duration(s.ttl)
			if s.ttl < 0 {
				ttl = "none"
			}
		}
		if sem := s.sem; sem != nil {
			// MODE says how many of the total are free; TTL is the soonest
			// expiry of a permit held.
			mode, ttl, waiters = fmt.Sprintf("%d/%d free", sem.available, sem.total()), "-", len(sem.claims)
			holders, holds = sem.holders(), int64(len(sem.permits))
			if len(sem.permits) > 0 {
				ttl = "none"
				if p := sem.permits[0]; !p.never {
					ttl = duration(p.left)
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%d\t%d\n",
			s.name, s.kind, mode, holders, holds, ttl, s.token, waiters)
	}
	return tw.Flush()
}
