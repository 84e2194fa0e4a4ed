package lua

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/script"
)

// callsLine is a script's header line of its Redis calls per path:
// "-- Calls: free lock 5, re-entry 6, held by another 3".
var callsLine = regexp.MustCompile(`(?m)^-- Calls: (.+)$`)

// headerCalls reads the calls per path from the header of the script name.
func headerCalls(t *testing.T, name string) map[string]int {
	t.Helper()
	i := slices.IndexFunc(script.All(), func(s script.Script) bool { return s.Name == name })
	s, ok := script.Script{}, i >= 0
	if ok {
		s = script.All()[i]
	}
	if !ok {
		t.Fatalf("no script %s", name)
	}
	m := callsLine.FindStringSubmatch(s.Source)
	if m == nil {
		t.Fatalf("%s: no %q line in its header", name, "-- Calls:")
	}
	calls := map[string]int{}
	for part := range strings.SplitSeq(m[1], ",") {
		i := strings.LastIndexByte(strings.TrimSpace(part), ' ')
		path, n := strings.TrimSpace(part)[:max(i, 0)], strings.TrimSpace(part)[i+1:]
		v, err := strconv.Atoi(n)
		if i < 0 || err != nil || path == "" {
			t.Fatalf("%s: %q in its Calls line is not PATH N", name, part)
		}
		calls[path] = v
	}
	return calls
}

// scriptCalls is the number of commands Redis ran since INFO commandstats
// read before, leaving out the scripts themselves and what the connections
// send on their own (INFO, PING, HELLO, CLIENT, SCRIPT).
func scriptCalls(t *testing.T, ctx context.Context, c rueidis.Client) map[string]int64 {
	t.Helper()
	info, err := c.Do(ctx, c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]int64{}
	for line := range strings.SplitSeq(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":calls=")
		if !ok {
			continue
		}
		if base, _, _ := strings.Cut(name, "|"); slices.Contains([]string{"info", "ping", "hello", "client", "script",
			"evalsha", "eval", "flushall"}, base) {
			continue
		}
		n, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
		calls[name] = n
	}
	return calls
}

// Each acquire and release script's header says how many Redis commands it
// runs on each path ("-- Calls: free lock 5, ..."): the cost of a lock in
// Redis is mostly its calls. Each path is run on a fresh server and its
// commands counted in INFO commandstats, so that the header cannot drift
// from the code.
func TestScriptCallsMatchHeaders(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, s := range loaded {
		if err := c.Do(ctx, c.B().ScriptLoad().Script(s.plain.src).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	const name, owner, other = "n", "client:1", "client:2"
	cfg := Config{Lease: time.Minute, Latch: time.Minute, QueueTimeout: time.Minute, PreferWriters: true, Grace: time.Second}
	lock, fair := NewLock(name, cfg), NewFair(name, cfg)
	read, write := NewRead(name, cfg), NewWrite(name, cfg)
	sem := NewSemaphore(name, cfg)
	campaign := NewElection(name, cfg).Campaign("v")
	k := script.KeysOf(name)

	// Steps of a setup, each a protocol's own call, as the engine makes it.
	try := func(p Protocol, o string, wait bool) func() error {
		return func() error { _, err := p.Try(ctx, c, o, wait); return err }
	}
	release := func(p Protocol, o, id string, all bool) func() error {
		return func() error { _, err := p.Release(ctx, c, o, id, all, 0); return err }
	}
	// kept releases as a lease taken less than WithHoldAtLeast ago does.
	kept := func(p Protocol, o, id string, all bool) func() error {
		return func() error { _, err := p.Release(ctx, c, o, id, all, time.Minute); return err }
	}
	keep := func(f *Fair, owners ...string) func() error {
		return func() error { return c.Do(ctx, f.Keep.Call(owners).Cmd(c, false)).Error() }
	}
	// releaseAll runs lock_release itself on its release of every hold
	// without keep, the path Lock.Release gives lock_release_all.
	releaseAll := func(o string) func() error {
		return func() error {
			return lockRelease.exec(ctx, c, []string{name, k.Channel, k.UnlockLatch("r")},
				[]string{script.UnlockMessage, "60000", o, "60000", "1", "0"}).Error()
		}
	}
	// handoff passes the lock from o to a successor of the same client.
	// With ask, only when nobody else wants it.
	handoff := func(l *Lock, o string, ask bool) func() error {
		return func() error { _, err := l.ReleaseTo(ctx, c, o, "client:9", "60000", ask, time.Millisecond); return err }
	}
	// want runs lock_want for o: due to try in delay.
	want := func(l *Lock, o string, delay time.Duration) func() error {
		return func() error {
			return lockWant.exec(ctx, c, l.wantKeys, []string{o, Ms(delay), "5"}).Error()
		}
	}
	// listen subscribes another connection to the lock's channel, as a
	// waiter's client is, until the test ends: the releasing client's
	// waiter, then another client's.
	var listening []net.Conn // closed before each path
	defer func() {
		for _, conn := range listening {
			conn.Close()
		}
	}()
	listen := func() error {
		conn, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			return err
		}
		listening = append(listening, conn)
		if _, err := fmt.Fprintf(conn, "SUBSCRIBE %s\r\n", k.Channel); err != nil {
			return err
		}
		_, err = conn.Read(make([]byte, 256)) // the confirmation
		return err
	}
	do := func(args ...string) func() error {
		return func() error { return c.Do(ctx, c.B().Arbitrary(args...).Build()).Error() }
	}
	// live leaves a fencing counter drawn a moment ago, as a lock used
	// before does: the common case of a draw.
	live := []func() error{try(lock, other, false), release(lock, other, "r0", true)}
	with := func(steps ...func() error) []func() error { return append(slices.Clone(live), steps...) }
	setPermits := do("SET", name, "4")

	type path struct {
		setup []func() error
		run   func() error
	}
	scripts := map[string]map[string]path{
		"lock_acquire": {
			"free lock":             {live, try(lock, owner, true)},
			"free lock new counter": {nil, try(lock, owner, true)},
			"re-entry":              {with(try(lock, owner, true)), try(lock, owner, true)},
			"held by another":       {with(try(lock, other, true)), try(lock, owner, true)},
		},
		"lock_release": {
			"release all":      {with(try(lock, owner, true)), releaseAll(owner)},
			"release all kept": {with(try(lock, owner, true)), kept(lock, owner, "r", true)},
			"not held":         {nil, releaseAll(owner)},
			"one of several holds": {with(try(lock, owner, true), try(lock, owner, true)),
				release(lock, owner, "r", false)},
			"last hold":      {with(try(lock, owner, true)), release(lock, owner, "r", false)},
			"last hold kept": {with(try(lock, owner, true)), kept(lock, owner, "r", false)},
			"latched": {with(try(lock, owner, true), try(lock, owner, true), release(lock, owner, "r", false)),
				release(lock, owner, "r", false)},
		},
		"lock_release_all": {
			"release all":   {with(try(lock, owner, true)), release(lock, owner, "r", true)},
			"not held":      {nil, release(lock, owner, "r", true)},
			"another holds": {with(try(lock, owner, true), do("HSET", name, other, "1")), release(lock, owner, "r", true)},
		},
		"lock_handoff": {
			"not held":           {nil, handoff(lock, owner, false)},
			"passed":             {with(try(lock, owner, true)), handoff(lock, owner, false)},
			"passed asking":      {with(try(lock, owner, true), listen), handoff(lock, owner, true)},
			"passed new counter": {[]func() error{try(lock, owner, true), do("DEL", k.Token)}, handoff(lock, owner, false)},
			"wanted":             {with(try(lock, owner, true), listen, listen), handoff(lock, owner, true)},
			"another holds":      {with(try(lock, owner, true), do("HSET", name, other, "1")), handoff(lock, owner, true)},
		},
		"lock_want": {
			"marked":  {with(try(lock, other, true)), want(lock, owner, time.Second)},
			"kept":    {with(try(lock, other, true), want(lock, "client:3", time.Millisecond)), want(lock, owner, time.Second)},
			"holding": {with(try(lock, owner, true)), want(lock, owner, time.Second)},
			"free":    {live, want(lock, owner, time.Second)},
		},
		"fair_acquire": {
			"free lock":               {live, try(fair, owner, true)},
			"re-entry":                {with(try(fair, owner, true)), try(fair, owner, true)},
			"held by another":         {with(try(fair, other, true)), try(fair, owner, false)},
			"held by another joining": {with(try(fair, other, true)), try(fair, owner, true)},
			"head of the queue":       {with(try(fair, other, true), try(fair, owner, true), try(fair, "client:3", true), release(fair, other, "r0", true)), try(fair, owner, true)},
		},
		"fair_release": {
			"release all":               {with(try(fair, owner, true)), release(fair, owner, "r", true)},
			"release all kept":          {with(try(fair, owner, true)), kept(fair, owner, "r", true)},
			"release all with a waiter": {with(try(fair, owner, true), try(fair, other, true)), release(fair, owner, "r", true)},
			"release all kept with a waiter": {with(try(fair, owner, true), try(fair, other, true)),
				kept(fair, owner, "r", true)},
			"one of several holds": {with(try(fair, owner, true), try(fair, owner, true)), release(fair, owner, "r", false)},
			"not held":             {nil, release(fair, owner, "r", true)},
		},
		"fair_keep": {
			"kept":       {with(try(fair, other, true), try(fair, owner, true)), keep(fair, owner)},
			"stale head": {with(try(fair, other, true), try(fair, owner, true), do("LPUSH", k.FairQueue, "stale"), do("ZADD", k.FairTimeout, "0", "stale")), keep(fair, owner)},
			"lock free":  {with(try(fair, other, true), try(fair, owner, true), do("DEL", name)), keep(fair, owner)},
			"none kept":  {nil, keep(fair, owner)},
		},
		"rw_read_acquire": {
			"free lock":             {live, try(read, owner, true)},
			"free lock new counter": {nil, try(read, owner, true)},
			"joining readers":       {with(try(read, other, true)), try(read, owner, true)},
			"re-entry":              {with(try(read, owner, true)), try(read, owner, true)},
			"held by a writer":      {with(try(write, other, true)), try(read, owner, true)},
			"writer waiting":        {with(try(read, other, true), try(write, "client:3", true)), try(read, owner, true)},
		},
		"rw_read_release": {
			"last reader": {with(try(read, owner, true)), release(read, owner, "r", true)},
			"last reader with a writer waiting": {with(try(read, owner, true), try(write, "client:3", true)),
				release(read, owner, "r", true)},
			"readers left":         {with(try(read, other, true), try(read, owner, true)), release(read, owner, "r", true)},
			"one of several holds": {with(try(read, owner, true), try(read, owner, true)), release(read, owner, "r", false)},
			"not held":             {nil, release(read, owner, "r", true)},
		},
		"rw_write_acquire": {
			"free lock":                  {live, try(write, owner, true)},
			"free lock new counter":      {nil, try(write, owner, true)},
			"re-entry":                   {with(try(write, owner, true)), try(write, owner, false)},
			"held by another":            {with(try(write, other, true)), try(write, owner, false)},
			"held by another announcing": {with(try(read, other, true)), try(write, owner, true)},
		},
		"rw_write_release": {
			"release all":          {with(try(write, owner, true)), release(write, owner, "r", true)},
			"one of several holds": {with(try(write, owner, true), try(write, owner, true)), release(write, owner, "r", false)},
			"not held":             {nil, release(write, owner, "r", true)},
		},
		"semaphore_acquire": {
			"one permit":     {[]func() error{setPermits}, try(sem.Weighted(1), owner, true)},
			"3 permits":      {[]func() error{setPermits}, try(sem.Weighted(3), owner, true)},
			"none left":      {[]func() error{setPermits, try(sem.Weighted(4), other, true)}, try(sem.Weighted(1), owner, true)},
			"over total":     {[]func() error{setPermits}, try(sem.Weighted(5), owner, true)},
			"never set":      {nil, try(sem.Weighted(1), owner, true)},
			"claim and wait": {[]func() error{setPermits, try(sem.Weighted(2), other, true)}, try(sem.Weighted(3), owner, true)},
		},
		"semaphore_release": {
			"one permit": {[]func() error{setPermits, try(sem.Weighted(1), owner, true)}, release(sem.Weighted(1), owner, "r", true)},
			"3 permits":  {[]func() error{setPermits, try(sem.Weighted(3), owner, true)}, release(sem.Weighted(3), owner, "r", true)},
			"not held":   {[]func() error{setPermits}, release(sem.Weighted(1), owner, "r", true)},
		},
		"election_campaign": {
			"first campaign":             {live, try(campaign, owner, true)},
			"first campaign new counter": {nil, try(campaign, owner, true)},
			"re-entry":                   {with(try(campaign, owner, true)), try(campaign, owner, true)},
			"held by another":            {with(try(campaign, other, true)), try(campaign, owner, true)},
		},
		"election_release": {
			"release all":          {with(try(campaign, owner, true)), release(campaign, owner, "r", true)},
			"one of several holds": {with(try(campaign, owner, true), try(campaign, owner, true)), release(campaign, owner, "r", false)},
			"not held":             {nil, release(campaign, owner, "r", true)},
		},
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range scripts {
			if !yield(n) {
				return
			}
		}
	})
	for _, sname := range names {
		paths := scripts[sname]
		want := headerCalls(t, sname)
		for p := range want {
			if _, ok := paths[p]; !ok {
				t.Errorf("%s: header path %q has no case here", sname, p)
			}
		}
		for pname, p := range paths {
			t.Run(sname+"/"+pname, func(t *testing.T) {
				if err := c.Do(ctx, c.B().Flushall().Build()).Error(); err != nil {
					t.Fatal(err)
				}
				for _, conn := range listening {
					conn.Close()
				}
				listening = nil
				for _, step := range p.setup {
					if err := step(); err != nil {
						t.Fatalf("setup: %v", err)
					}
				}
				before := scriptCalls(t, ctx, c)
				err := p.run()
				after := scriptCalls(t, ctx, c)
				if err != nil {
					if _, over := err.(*OverTotal); !over {
						t.Fatalf("run: %v", err)
					}
				}
				var got int64
				var which []string
				for cmd, n := range after {
					if d := n - before[cmd]; d > 0 {
						got += d
						which = append(which, cmd+"×"+strconv.FormatInt(d, 10))
					}
				}
				slices.Sort(which)
				w, ok := want[pname]
				switch {
				case !ok:
					t.Errorf("%s: path %q (%d calls: %v) is not in the header's Calls line", sname, pname, got, which)
				case got != int64(w):
					t.Errorf("%s, %s: %d calls (%v), the header says %d", sname, pname, got, which, w)
				}
			})
		}
	}
}
