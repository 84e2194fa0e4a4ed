package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/script"
)

// env is what a command works with.
type env struct {
	prefix  string // -prefix: the key prefix of the names given
	rc      rueidis.Client
	clients *clients
	stdin   io.Reader
	stdout  io.Writer
}

// command is one subcommand: setup registers its flags and returns the
// function that runs it on its one argument. asJSON is -json (or -o json),
// which may come before the command too; only commands with json take it.
type command struct {
	arg, help string
	def       string // the argument when none is given; "" when one is required
	json      bool   // the command takes -json
	setup     func(fs *flag.FlagSet, asJSON *bool) func(ctx context.Context, e env, arg string) error
}

var commands = map[string]command{
	"inspect": {
		arg:  "NAME",
		json: true,
		help: "Show the lock NAME: kind, holders and hold counts with each holder's\nconnection (name and address), TTL, fencing token, the fair queue's\nwaiters with their deadlines, the read holds, an election's leader and\nterm, and for an rlock, election or rw the Clients waiting (connections\nsubscribed to its channel: Redis sees one per Client, not its goroutines);\nor the semaphore NAME; fence's record of a key (leasehold_fence:{KEY}), its\nlast token applied. A NAME with no lock names the locks whose keys end with\nit after a prefix (a Client's WithKeyPrefix) and the -prefix that reads\nthem, looking at a bounded number of keys. With -json, one JSON object.",
		setup: func(fs *flag.FlagSet, asJSON *bool) func(context.Context, env, string) error {
			jsonFlag(fs, asJSON)
			return func(ctx context.Context, e env, name string) error {
				return inspect(ctx, e, name, *asJSON)
			}
		},
	},
	"watch": {
		arg:  "NAME",
		json: true,
		help: "Show the lock NAME and redraw it as it changes, until interrupted.\nOn a terminal the screen is redrawn on every look; otherwise a new\nsnapshot is printed whenever the state (not just its TTLs) changes.\nWith -json, a JSON object (one line) for the first state and each change.",
		setup: func(fs *flag.FlagSet, asJSON *bool) func(context.Context, env, string) error {
			every := fs.Duration("interval", 500*time.Millisecond, "how often to look")
			jsonFlag(fs, asJSON)
			return func(ctx context.Context, e env, name string) error {
				if *every <= 0 {
					return usagef("-interval %v is not positive", *every)
				}
				return watch(ctx, e, name, *every, *asJSON)
			}
		},
	},
	"release": {
		arg:  "NAME",
		help: "Force-release the lock NAME whoever holds it, and wake its waiters.\nHolders on a leasehold Client opened with client-side caching (the\ndefault) hear of it at once; others at their next renewal. Asks for\nconfirmation unless --yes is given; exits 1, releasing nothing, unless\nthe answer is y (no terminal to ask: give --yes).",
		setup: func(fs *flag.FlagSet, _ *bool) func(context.Context, env, string) error {
			yes := fs.Bool("yes", false, "do not ask for confirmation")
			fs.BoolVar(yes, "y", false, "short for -yes")
			return func(ctx context.Context, e env, name string) error {
				return release(ctx, e, name, *yes)
			}
		},
	},
	"group": {
		arg:  "NAME",
		json: true,
		help: "Show the partition group NAME (package partition): its members, each with\nits lease, capacity, partitions assigned and running, and connection; and\neach partition: the member it is assigned to (OWNER), whether that member's\nClient holds its lock NAME:P (running), another Client does (moving: its\nlast owner's fn has not returned, or a dead owner's lease runs out) or none\ndoes (free), its lock's fencing token, and since when it is held, read from\nthe token (drawn from the server's clock, in µs: a bound when the partition\nmoved twice within a lease; none once the token has run out, a lease after\nit was drawn). With -json, one JSON object.",
		setup: func(fs *flag.FlagSet, asJSON *bool) func(context.Context, env, string) error {
			jsonFlag(fs, asJSON)
			return func(ctx context.Context, e env, name string) error {
				return groupCmd(ctx, e, name, *asJSON)
			}
		},
	},
	"list": {
		arg:  "[PATTERN]",
		def:  "*",
		json: true,
		help: "List the locks whose names match PATTERN, a Redis glob such as 'orders:*'\n(default *: every lock). Keys are found with SCAN, a batch at a time,\nnever with KEYS. WAITERS is a fair lock's queue or a semaphore's waiters for\nseveral permits, and for an rlock, election or rw \"N clients\": the Clients\nwaiting, each subscribed once to the lock's channel however many of its\ngoroutines wait (Redis keeps no list of them). With -json, one JSON object\nper lock, one a line (none if none match).",
		setup: func(fs *flag.FlagSet, asJSON *bool) func(context.Context, env, string) error {
			count := fs.Int64("count", 1000, "keys SCAN looks at per call (its COUNT)")
			jsonFlag(fs, asJSON)
			return func(ctx context.Context, e env, pattern string) error {
				if *count <= 0 {
					return usagef("-count %d is not positive", *count)
				}
				return list(ctx, e, pattern, *count, *asJSON)
			}
		},
	},
}

func inspect(ctx context.Context, e env, name string, asJSON bool) error {
	s, err := e.readState(ctx, name)
	if err != nil {
		return err
	}
	if s.Shape == lua.ShapeFree {
		s.hint = e.lookElsewhere(ctx, escapeGlob(name), isLock)
	}
	e.clients.annotate(ctx, s)
	if asJSON {
		return renderJSON(e.stdout, s)
	}
	if err := render(e.stdout, s, true); err != nil {
		return err
	}
	if s.Shape == lua.ShapeFree && e.isGroup(ctx, name) {
		_, err = fmt.Fprintf(e.stdout, "%q is a partition group: leasehold group %s\n", name, name)
		return err
	}
	if t := s.hint.text(); t != "" {
		_, err = fmt.Fprintf(e.stdout, "no lock %q%s\n", name, t)
	}
	return err
}

// watch polls the lock every interval until ctx ends. Polling rather than
// keyspace notifications: they are off on most servers and turning them on
// is a server-wide change, and twice a second costs Redis nothing. With
// asJSON it writes a line of JSON for each change of state, on a terminal
// too: JSON lines are for programs, which want no redrawn screen.
func watch(ctx context.Context, e env, name string, interval time.Duration, asJSON bool) error {
	tty := isTerminal(e.stdout) && !asJSON
	var last string
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		s, err := e.readState(ctx, name)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		e.clients.annotate(ctx, s)
		var shape bytes.Buffer
		_ = render(&shape, s, false)
		if tty || shape.String() != last {
			last = shape.String()
			var out bytes.Buffer
			switch {
			case asJSON:
				if err := renderJSON(&out, s); err != nil {
					return err
				}
			case tty:
				out.WriteString("\x1b[H\x1b[2J") // home, clear screen
				fmt.Fprintf(&out, "every %v, ^C to stop, %s\n\n", interval, time.Now().Format("15:04:05"))
				_ = render(&out, s, true)
			default:
				fmt.Fprintf(&out, "--- %s\n", time.Now().Format("15:04:05.000"))
				_ = render(&out, s, true)
			}
			if _, err := e.stdout.Write(out.Bytes()); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// isTerminal reports whether f is a terminal: watch redraws one in place.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	fi, err := file.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func release(ctx context.Context, e env, name string, yes bool) error {
	s, err := e.readState(ctx, name)
	if err != nil {
		return err
	}
	switch {
	case s.Shape == lua.ShapeNotLock:
		return fmt.Errorf("%s is a Redis %s, not a lock: left alone", name, s.Type)
	case s.Shape == lua.ShapeSemaphore:
		return fmt.Errorf("%s is a semaphore: its permits come back when their leases end; release takes none: left alone", name)
	case s.Shape == lua.ShapeCounter:
		return fmt.Errorf("%s holds an integer, either a counter or an unused semaphore, not a lock: left alone", name)
	case s.Shape == lua.ShapeFence:
		return fmt.Errorf("%s is fence's record of the last token applied to %s, not a lock: left alone", name, s.Fence.Resource)
	case s.Shape == lua.ShapeFree:
		fmt.Fprintf(e.stdout, "%s is not held: nothing to release%s\n", name, e.lookElsewhere(ctx, escapeGlob(name), isLock).text())
		return nil
	case !s.Held() && s.KeptBy == "":
		fmt.Fprintf(e.stdout, "%s is not held: nothing to release\n", name)
		return nil
	}
	if !yes {
		e.clients.annotate(ctx, s)
		if err := render(e.stdout, s, true); err != nil {
			return err
		}
		owners := "1 owner"
		if n := len(s.Holders); n > 1 {
			owners = fmt.Sprintf("%d owners", n)
		}
		if s.KeptBy != "" {
			fmt.Fprintf(e.stdout, "\nForce-release %s, kept after its release (held by no one)? A job it guards may run again at once. [y/N] ", name)
		} else {
			fmt.Fprintf(e.stdout, "\nForce-release %s, held by %s? Its holders hear of it at once (leasehold Clients with caching on) or at their next renewal. [y/N] ", name, owners)
		}
		answer, _ := bufio.NewReader(e.stdin).ReadString('\n')
		if !isTerminal(e.stdin) {
			fmt.Fprintln(e.stdout) // a terminal echoed the user's Enter; a pipe does not
		}
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			// Non-zero, so that a script that meant to release notices.
			return fmt.Errorf("%s left as it is: not confirmed (answer y, or give --yes)", name)
		}
	}
	deleted, err := forceRelease(ctx, e.rc, s)
	if err != nil {
		return fmt.Errorf("release %s: %w", name, err)
	}
	if !deleted {
		fmt.Fprintf(e.stdout, "%s was released meanwhile: nothing to release\n", name)
		return nil
	}
	fmt.Fprintf(e.stdout, "released %s (%s); its waiters were woken\n", name, s.Shape)
	return nil
}

// list finds lock names matching pattern on every node (a cluster's keys
// are spread over its masters), then reads each.
func list(ctx context.Context, e env, pattern string, count int64, asJSON bool) error {
	names, err := lockNames(ctx, e.rc, e.prefix+pattern, count)
	if err != nil {
		return err
	}
	states, err := lua.InspectAll(ctx, e.rc, names)
	if err != nil {
		return err
	}
	var locks []*lock
	for _, s := range states {
		if listed(s) {
			l := &lock{State: s, prefix: e.prefix}
			if err := e.waiting(ctx, l); err != nil {
				return err
			}
			locks = append(locks, l)
		}
	}
	e.clients.annotate(ctx, locks...)
	if asJSON {
		// JSON lines: no locks is no line, which a program reads as such.
		for _, s := range locks {
			if err := renderJSON(e.stdout, s); err != nil {
				return err
			}
		}
		return nil
	}
	if len(locks) == 0 {
		hint := ""
		if !strings.HasPrefix(pattern, "*") {
			// Under another prefix? (A pattern that starts with * matched
			// every prefix already.)
			hint = e.lookElsewhere(ctx, pattern, listed).text()
		}
		fmt.Fprintf(e.stdout, "no locks match %q%s\n", pattern, hint)
		return nil
	}
	return renderList(e.stdout, locks)
}

// listed says whether list shows s: a lock or semaphore held, kept or
// waited for.
func listed(s lua.State) bool {
	switch s.Shape {
	case lua.ShapeNotLock, lua.ShapeCounter, lua.ShapeFence:
		return false
	}
	return s.Held() || s.KeptBy != "" || len(s.Waiters) > 0
}

// lockNames are the names, sorted, of the locks on every node that match
// pattern: held locks (hashes), fair locks with waiters only (their queue),
// semaphores with permits held (their permits' zset).
func lockNames(ctx context.Context, rc rueidis.Client, pattern string, count int64) ([]string, error) {
	names := map[string]bool{}
	queuePrefix := strings.TrimSuffix(script.KeysOf("").FairQueue, "{}")
	for _, node := range rc.Nodes() {
		// Held locks are hashes. A fair lock whose holder has gone while
		// others wait has no hash, only its queue: find it by its queue.
		err := scan(ctx, node, pattern, "hash", count, func(key string) { names[key] = true })
		if err != nil {
			return nil, err
		}
		err = scan(ctx, node, script.KeysOf(pattern).FairQueue, "list", count, func(key string) {
			names[unbrace(strings.TrimPrefix(key, queuePrefix))] = true
		})
		if err != nil {
			return nil, err
		}
		// A semaphore is a string; one with permits held has its set of
		// permits, {NAME}:timeout: find it by that.
		err = scan(ctx, node, script.KeysOf(pattern).SemaphoreTimeout, "zset", count, func(key string) {
			names[unbrace(strings.TrimSuffix(key, ":timeout"))] = true
		})
		if err != nil {
			return nil, err
		}
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	return sorted, nil
}

// unbrace is NAME of {NAME}, and s itself when it is not in braces.
func unbrace(s string) string {
	if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
		return s[1 : len(s)-1]
	}
	return s
}

// scan calls found for every key of type typ matching pattern on one node,
// count keys at a time.
func scan(ctx context.Context, node rueidis.Client, pattern, typ string, count int64, found func(string)) error {
	var cursor uint64
	for {
		entry, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(pattern).Count(count).Type(typ).Build()).AsScanEntry()
		if err != nil {
			return fmt.Errorf("scan %s: %w", pattern, err)
		}
		for _, k := range entry.Elements {
			found(k)
		}
		if cursor = entry.Cursor; cursor == 0 {
			return nil
		}
	}
}
