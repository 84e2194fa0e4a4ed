package partition_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/partition"
	"github.com/leasehold/leasehold/rlock"
)

// Bad input is Run's *lease.Error wrapping lease.ErrInvalid, at once, with
// nothing written.
func TestInvalidInput(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	fn := func(context.Context, int) error { return nil }
	tests := []struct {
		name string
		g    *partition.Group
		fn   func(context.Context, int) error
	}{
		{"nil client", partition.New(nil, "g", 4), fn},
		{"empty name", partition.New(c, "", 4), fn},
		{"no partitions", partition.New(c, "g", 0), fn},
		{"negative partitions", partition.New(c, "g", -1), fn},
		{"too many partitions", partition.New(c, "g", 1<<14+1), fn},
		{"capacity 0", partition.New(c, "g", 4, partition.WithCapacity(0)), fn},
		{"nil fn", partition.New(c, "g", 4), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { done <- tt.g.Run(ctxTimeout(t, 10*time.Second), tt.fn) }()
			select {
			case err := <-done:
				isInvalid(t, err)
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return at once")
			}
		})
	}
	if keys, _ := srv.Do("KEYS", "*").AsStrSlice(); len(keys) != 0 {
		t.Fatalf("keys written: %v", keys)
	}
}

// A Group runs one Run at a time; a second returns ErrInvalid while the
// first runs on.
func TestRunTwice(t *testing.T) {
	srv := redistest.Start(t)
	r := newRecorder(t)
	rn := run(t, r, "a", open(t, srv), 2)
	settled(t, 10*time.Second, r, 2, rn)
	isInvalid(t, rn.g.Run(ctxTimeout(t, 10*time.Second), func(context.Context, int) error { return nil }))
	settled(t, time.Second, r, 2, rn)
}

// Members agree on n: a member with another n fails with ErrInvalid,
// writing nothing, and the others run on.
func TestPartitionCountMismatch(t *testing.T) {
	srv := redistest.Start(t)
	r := newRecorder(t)
	a := run(t, r, "a", open(t, srv), 4)
	settled(t, 10*time.Second, r, 4, a)
	err := partition.New(open(t, srv), "g", 5).Run(ctxTimeout(t, 10*time.Second), func(context.Context, int) error { return nil })
	isInvalid(t, err)
	settled(t, time.Second, r, 4, a)
}

// Joins and leaves, one at a time: after each, the members run n
// partitions between them, floor or ceil of n over the members each; a
// join moves only the surplus over the new quotas, to the joiner, and a
// leave only the leaver's partitions, each partition once (its fn started
// once more); never are two fns of one partition running at once, and each
// partition's tokens rise across its owners.
func TestBalanceAndStickiness(t *testing.T) {
	srv := redistest.Start(t)
	const n = 12
	r := newRecorder(t)
	before := map[int]int{}
	step := func(what string, wantMoves int, rs ...*runner) {
		t.Helper()
		settled(t, 10*time.Second, r, n, rs...)
		// Settled, nothing more moves: a late move would show here.
		time.Sleep(time.Second)
		if got := r.started(); got != wantMoves {
			t.Fatalf("%s: %d fns started in all, want %d", what, got, wantMoves)
		}
		after := r.startsOf()
		for p, k := range after {
			if k > before[p]+1 {
				t.Fatalf("%s: partition %d started %d times", what, p, k-before[p])
			}
		}
		before = after
	}
	a := run(t, r, "a", open(t, srv, leasehold.WithWatchdog(calm)), n)
	step("a alone", 12, a)
	b := run(t, r, "b", open(t, srv, leasehold.WithWatchdog(calm)), n)
	step("b joins", 12+6, a, b)
	c := run(t, r, "c", open(t, srv, leasehold.WithWatchdog(calm)), n)
	step("c joins", 12+6+4, a, b, c)
	d := run(t, r, "d", open(t, srv, leasehold.WithWatchdog(calm)), n)
	step("d joins", 12+6+4+3, a, b, c, d)
	moved := r.owners()["b"]
	if err := b.stop(t); err != nil {
		t.Fatalf("b's Run: %v", err)
	}
	step("b leaves", 12+6+4+3+moved, a, c, d)
	if err := a.stop(t); err != nil {
		t.Fatalf("a's Run: %v", err)
	}
	step("a leaves", 12+6+4+3+moved+4, c, d)
}

// A member whose Run ends hands its partitions over at once: the others
// run them within a second (and the fns' exit, here at once), not at the
// end of its lease (10s here).
func TestHandover(t *testing.T) {
	srv := redistest.Start(t)
	const n, lease = 16, 10 * time.Second
	r := newRecorder(t)
	a := run(t, r, "a", open(t, srv, leasehold.WithWatchdog(lease)), n)
	b := run(t, r, "b", open(t, srv, leasehold.WithWatchdog(lease)), n)
	settled(t, 10*time.Second, r, n, a, b)
	start := time.Now()
	a.cancel()
	settled(t, 10*time.Second, r, n, b)
	took := time.Since(start)
	t.Logf("handover of %d partitions took %v", n/2, took)
	// A second, plus 4s for a loaded machine under -race: below the lease.
	if took > 5*time.Second {
		t.Fatalf("handover took %v", took)
	}
	if err := a.wait(t, 5*time.Second); err != nil {
		t.Fatalf("a's Run: %v", err)
	}
}

// A member killed with SIGKILL is taken over within its lease (1s) plus a
// moment: the others run its partitions, under tokens above its own. The
// survivor renews every 20s: the takeover comes from its check as the
// killed member's lease ends, not from a renewal that happens to follow.
func TestKilledMemberTakenOver(t *testing.T) {
	srv := redistest.Start(t)
	const n, lease = 8, time.Second
	r := newRecorder(t)
	a := run(t, r, "a", open(t, srv, leasehold.WithWatchdog(time.Minute)), n)
	settled(t, 10*time.Second, r, n, a)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+srv.Addr(), helperEnv+"_WATCHDOG="+lease.String(),
		helperEnv+"_N="+strconv.Itoa(n), helperEnv+"_GROUP=g")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	tokens := map[int]uint64{}
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			p, _ := strconv.Atoi(f[0])
			tok, _ := strconv.ParseUint(f[1], 10, 64)
			mu.Lock()
			tokens[p] = tok
			mu.Unlock()
		}
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	eventually(t, 10*time.Second, "the helper running half the partitions", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(tokens) == n/2 && r.owners()["a"] == n/2
	})
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no goodbye
		t.Fatal(err)
	}
	<-exited
	killed := time.Now()
	settled(t, 10*time.Second, r, n, a)
	took := time.Since(killed)
	t.Logf("takeover of %d partitions took %v after the kill (lease %v)", n/2, took, lease)
	// The lease, then a second, plus 3s for a loaded machine under -race:
	// well below the survivor's renewal interval.
	if took > lease+4*time.Second {
		t.Fatalf("takeover took %v", took)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for p, tok := range tokens {
		if r.last[p] <= tok {
			t.Errorf("partition %d: token %d after the killed member's %d", p, r.last[p], tok)
		}
	}
}

// A member whose connection to Redis is cut is taken over within its lease
// plus a moment, and its fns end (its leases lost) before the others'
// start: the recorder sees no overlap.
func TestCutMemberTakenOver(t *testing.T) {
	srv := redistest.Start(t)
	const n = 8
	r := newRecorder(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	opt := srv.Option()
	opt.InitAddress = []string{proxy.Addr()}
	a := run(t, r, "a", open(t, srv), n)
	b := run(t, r, "b", openAt(t, opt), n)
	settled(t, 10*time.Second, r, n, a, b)
	proxy.Refuse(true)
	proxy.Cut()
	cut := time.Now()
	settled(t, 10*time.Second, r, n, a)
	took := time.Since(cut)
	t.Logf("takeover of a cut member's %d partitions took %v (lease %v)", n/2, took, watchdog)
	// The lease, then a second, plus 4s for a loaded machine under -race.
	if took > watchdog+5*time.Second {
		t.Fatalf("takeover took %v", took)
	}
	// Back, b joins again and gets its share.
	proxy.Refuse(false)
	settled(t, 15*time.Second, r, n, a, b)
}

// An fn that returns nil leaves its partition this member's, idle: not run
// again, and run by no other member, until it moves; then its new owner
// runs it.
func TestFnReturnsNil(t *testing.T) {
	srv := redistest.Start(t)
	const n = 4
	r := newRecorder(t)
	a := runFn(t, "a", open(t, srv, leasehold.WithWatchdog(calm)), n, func(ctx context.Context, p int) error {
		r.enter(ctx, "a", p)
		r.leave("a", p)
		return nil
	})
	eventually(t, 10*time.Second, "a assigned every partition, each fn run once", func() bool {
		return a.g.Stats().Assigned == n && r.started() == n
	})
	time.Sleep(calm + calm/4) // renewals and a check: nothing runs again
	if got := r.started(); got != n || len(a.g.Owned()) != 0 {
		t.Fatalf("%d fns started, %v owned; want %d, none", got, a.g.Owned(), n)
	}
	b := run(t, r, "b", open(t, srv, leasehold.WithWatchdog(calm)), n)
	eventually(t, 10*time.Second, "b runs half", func() bool { return r.owners()["b"] == n/2 })
	time.Sleep(calm + calm/4)
	if got := r.started(); got != n+n/2 || a.g.Stats().Assigned != n/2 {
		t.Fatalf("%d fns started, a assigned %d; want %d, %d: a's idle partitions ran again", got, a.g.Stats().Assigned, n+n/2, n/2)
	}
	if err := a.stop(t); err != nil {
		t.Fatal(err)
	}
	settled(t, 10*time.Second, r, n, b)
}

// An fn that returns an error ends Run with it: every other fn's ctx ends
// (with that error as its cause), Run returns once they have returned,
// having left the group, whose other member takes every partition.
func TestFnError(t *testing.T) {
	srv := redistest.Start(t)
	const n = 6
	r := newRecorder(t)
	boom := errors.New("boom")
	fail := make(chan struct{})
	var causes sync.Map
	a := runFn(t, "a", open(t, srv, leasehold.WithWatchdog(calm)), n, func(ctx context.Context, p int) error {
		r.enter(ctx, "a", p)
		defer r.leave("a", p)
		select {
		case <-fail:
			if p == 0 {
				return boom
			}
			<-ctx.Done()
		case <-ctx.Done():
		}
		time.Sleep(50 * time.Millisecond) // winding down: Run waits
		causes.Store(p, context.Cause(ctx))
		return ctx.Err()
	})
	settled(t, 10*time.Second, r, n, a)
	b := run(t, r, "b", open(t, srv, leasehold.WithWatchdog(calm)), n)
	settled(t, 10*time.Second, r, n, a, b)
	aParts := a.g.Owned()
	if aParts[0] != 0 {
		// a keeps 0..2, the lowest: see lib/partition.lua.
		t.Fatalf("a owns %v, not partition 0", aParts)
	}
	close(fail)
	err := a.wait(t, 10*time.Second)
	if !errors.Is(err, boom) {
		t.Fatalf("Run returned %v, want boom", err)
	}
	if owned := a.g.Owned(); len(owned) != 0 || r.owners()["a"] != 0 {
		t.Fatalf("Run returned with %v owned, %d running", owned, r.owners()["a"])
	}
	for _, p := range aParts[1:] {
		if c, _ := causes.Load(p); !errors.Is(c.(error), boom) {
			t.Errorf("partition %d's ctx ended with %v, want boom", p, c)
		}
	}
	settled(t, 10*time.Second, r, n, b)
}

// A partition's lease lost under fn (its lock deleted by an operator) ends
// fn's ctx with lease.ErrLost; the member, whose partition it still is,
// takes it again under a higher token. The other partitions run on.
func TestLostPartitionTakenAgain(t *testing.T) {
	srv := redistest.Start(t)
	const n = 2
	r := newRecorder(t)
	causes := make(chan error, 4)
	c := open(t, srv, leasehold.WithWatchdog(calm))
	a := runFn(t, "a", c, n, func(ctx context.Context, p int) error {
		r.enter(ctx, "a", p)
		defer r.leave("a", p)
		<-ctx.Done()
		if p == 0 {
			causes <- context.Cause(ctx)
		}
		return nil
	})
	settled(t, 10*time.Second, r, n, a)
	ctx := ctxTimeout(t, 10*time.Second)
	if ok, err := rlock.New(open(t, srv), "g:0").ForceRelease(ctx); !ok || err != nil {
		t.Fatalf("ForceRelease: %v, %v", ok, err)
	}
	select {
	case cause := <-causes:
		wantErr(t, cause, lease.ErrLost)
	case <-time.After(5 * time.Second):
		t.Fatal("fn's ctx did not end after its lock was deleted")
	}
	eventually(t, 10*time.Second, "partition 0 run again", func() bool { return r.startsOf()[0] == 2 })
	settled(t, 10*time.Second, r, n, a)
	if got := r.startsOf()[1]; got != 1 {
		t.Fatalf("partition 1 started %d times", got)
	}
}

// Closing the Client ends Run with an error wrapping lease.ErrClosed, every
// fn returned.
func TestClientClosed(t *testing.T) {
	srv := redistest.Start(t)
	r := newRecorder(t)
	c, err := leasehold.Open(srv.Option(), leasehold.WithWatchdog(watchdog))
	if err != nil {
		t.Fatal(err)
	}
	a := run(t, r, "a", c, 4)
	settled(t, 10*time.Second, r, 4, a)
	c.Close()
	wantErr(t, a.wait(t, 10*time.Second), lease.ErrClosed)
	if got := r.owners()["a"]; got != 0 {
		t.Fatalf("%d fns still running after Run returned", got)
	}
}

// A member's capacity caps what it owns; the others share the rest.
func TestCapacity(t *testing.T) {
	srv := redistest.Start(t)
	const n = 10
	r := newRecorder(t)
	a := run(t, r, "a", open(t, srv, leasehold.WithWatchdog(calm)), n, partition.WithCapacity(2))
	b := run(t, r, "b", open(t, srv, leasehold.WithWatchdog(calm)), n)
	c := run(t, r, "c", open(t, srv, leasehold.WithWatchdog(calm)), n)
	eventually(t, 10*time.Second, "a runs 2, b and c 4 each", func() bool {
		o := r.owners()
		return o["a"] == 2 && o["b"] == 4 && o["c"] == 4 && len(a.g.Owned()) == 2
	})
	_ = b
	_ = c
}

// When every member has left, nothing of the group is left in Redis: the
// group's keys and the partitions' locks at once, their fencing counters
// within the lease.
func TestNoKeyLeft(t *testing.T) {
	srv := redistest.Start(t)
	r := newRecorder(t)
	a := run(t, r, "a", open(t, srv), 4)
	b := run(t, r, "b", open(t, srv), 4)
	settled(t, 10*time.Second, r, 4, a, b)
	for _, rn := range []*runner{a, b} {
		if err := rn.stop(t); err != nil {
			t.Fatal(err)
		}
	}
	keys, _ := srv.Do("KEYS", "*").AsStrSlice()
	for _, k := range keys {
		if !strings.HasPrefix(k, "redisson_lock_token:") {
			t.Errorf("key %s left after every member left", k)
		}
	}
	eventually(t, watchdog+5*time.Second, "no key left", func() bool {
		keys, err := srv.Do("KEYS", "*").AsStrSlice()
		return err == nil && len(keys) == 0
	})
}

// A join reaches balance within a few seconds: 64 partitions over five
// members, then a sixth; with a 10s lease, nothing waits for one to end.
func TestRebalanceTime(t *testing.T) {
	srv := redistest.Start(t)
	const n, lease = 64, 10 * time.Second
	r := newRecorder(t)
	var rs []*runner
	for i := range 5 {
		rs = append(rs, run(t, r, "m"+strconv.Itoa(i), open(t, srv, leasehold.WithWatchdog(lease)), n))
	}
	settled(t, 20*time.Second, r, n, rs...)
	start := time.Now()
	rs = append(rs, run(t, r, "m5", open(t, srv, leasehold.WithWatchdog(lease)), n))
	settled(t, 10*time.Second, r, n, rs...)
	took := time.Since(start)
	t.Logf("a sixth member joining 64 partitions over five: balanced after %v", took)
	// A few seconds, on a loaded machine under -race: below the lease.
	if took > 5*time.Second {
		t.Fatalf("balance took %v", took)
	}
}

// The Client's key prefix comes before every key of the group, and of its
// partitions' locks; the names users see (the partitions' leases, the
// group's Name) are as given.
func TestKeyPrefix(t *testing.T) {
	srv := redistest.Start(t)
	r := newRecorder(t)
	a := run(t, r, "a", open(t, srv, leasehold.WithKeyPrefix("app:")), 2)
	settled(t, 10*time.Second, r, 2, a)
	keys, _ := srv.Do("KEYS", "*").AsStrSlice()
	slices.Sort(keys)
	want := []string{"app:g:0", "app:g:1", "redisson_lock_token:{app:g:0}", "redisson_lock_token:{app:g:1}",
		"{app:g}:members", "{app:g}:partitions"}
	if !slices.Equal(keys, want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	if got := a.g.Name(); got != "g" {
		t.Fatalf("Name() = %q, want the name as given, %q", got, "g")
	}
}

// In Redis Cluster the partitions' locks spread over the slots (NAME:PART
// hashes apart), the group's keys stay in NAME's, and its messages reach
// the members (sharded pub/sub on Redis 7): a member that stops hands its
// partitions over at once.
func TestCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	const n = 12
	r := newRecorder(t)
	const lease = 10 * time.Second // the handover must not wait for it
	a := run(t, r, "a", openAt(t, cl.Option(), leasehold.WithWatchdog(lease)), n)
	b := run(t, r, "b", openAt(t, cl.Option(), leasehold.WithWatchdog(lease)), n)
	settled(t, 20*time.Second, r, n, a, b)
	slots := map[int64]bool{}
	for p := range n {
		slots[cl.KeySlot("g:"+strconv.Itoa(p))] = true
	}
	locks := cl.Keys("g:*")
	if len(slots) < n/2 || len(locks) != n {
		t.Fatalf("%d partitions' locks %v over %d slots", n, locks, len(slots))
	}
	start := time.Now()
	a.cancel()
	settled(t, 10*time.Second, r, n, b)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("handover took %v (lease %v)", took, lease)
	}
}

// commandCalls reads how many times srv has run each command (INFO
// commandstats), commands run by scripts included.
func commandCalls(t *testing.T, srv *redistest.Server) map[string]int64 {
	t.Helper()
	info, err := srv.Do("INFO", "commandstats").ToString()
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":calls=")
		if ok {
			n, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
			calls[name] = n
		}
	}
	return calls
}

// Once settled, a group costs Redis its members' renewals, one pipelined
// round per member and tick with a script per hold (the membership and each
// partition's lock), and a check per member about every two-thirds of a
// lease (at the first of the others' leases' end): nothing per partition
// besides its renewal, and nothing per tick besides the rounds.
func TestSteadyStateCost(t *testing.T) {
	srv := redistest.Start(t)
	const n, members, lease = 64, 4, 1500 * time.Millisecond
	r := newRecorder(t)
	var rs []*runner
	var cs []*leasehold.Client
	for i := range members {
		c := open(t, srv, leasehold.WithWatchdog(lease))
		cs = append(cs, c)
		rs = append(rs, run(t, r, "m"+strconv.Itoa(i), c, n))
	}
	settled(t, 20*time.Second, r, n, rs...)
	time.Sleep(lease) // the joins' checks are done
	rounds := func() (sum uint64) {
		for _, c := range cs {
			sum += c.Stats().RenewalRounds
		}
		return sum
	}
	const window = 6 * time.Second
	before, roundsBefore := commandCalls(t, srv), rounds()
	time.Sleep(window)
	after, dRounds := commandCalls(t, srv), rounds()-roundsBefore
	// partition_check's steady path runs one ZCARD, and no other script
	// of the group's (nor the guard's reads, HMGET) does.
	checks := after["zcard"] - before["zcard"]
	scripts := after["evalsha"] + after["eval"] - before["evalsha"] - before["eval"]
	renewals := int64(dRounds) * (1 + n/members)
	t.Logf("%v, %d members, %d partitions: %d renewal rounds (%d scripts), %d checks, %d scripts in all",
		window, members, n, dRounds, renewals, checks, scripts)
	// A check per member every 2/3 of a lease at most (a renewal every
	// third: the first lease to end is at least 2/3 of a lease away), 24
	// in all, and one more each at the window's edges; a loaded machine's
	// late timers make fewer. Checking at every renewal would make 48.
	if limit := int64(members*window/(lease*2/3) + members); checks > limit || checks == 0 {
		t.Fatalf("%d checks in %v, want 1 to %d", checks, window, limit)
	}
	if scripts > renewals+checks+int64(members) {
		t.Fatalf("%d scripts ran, beyond %d renewals and %d checks", scripts, renewals, checks)
	}
}

// A member removed from the group behind its back (an operator's ZREM)
// stops its partitions at its next check and joins again under a new id;
// the group settles again, never two runs of a partition at once.
func TestDroppedMemberJoinsAgain(t *testing.T) {
	srv := redistest.Start(t)
	const n = 8
	r := newRecorder(t)
	a := run(t, r, "a", open(t, srv), n)
	cb := open(t, srv)
	b := run(t, r, "b", cb, n)
	settled(t, 10*time.Second, r, n, a, b)
	members, _ := srv.Do("ZRANGE", "{g}:members", "0", "-1").AsStrSlice()
	var gone string
	for _, m := range members {
		if strings.HasPrefix(m, cb.ID()+":") {
			gone = m
		}
	}
	if gone == "" {
		t.Fatalf("no member of b's Client among %v", members)
	}
	starts := r.started()
	srv.Do("ZREM", "{g}:members", gone)
	srv.Do("PUBLISH", "leasehold_partition__channel:{g}", "1")
	eventually(t, 10*time.Second, "b back under a new id", func() bool {
		ms, _ := srv.Do("ZRANGE", "{g}:members", "0", "-1").AsStrSlice()
		return len(ms) == 2 && !slices.Contains(ms, gone)
	})
	settled(t, 10*time.Second, r, n, a, b)
	if r.started() == starts {
		t.Fatal("b's partitions did not stop when it was dropped")
	}
}

// A group runs as an ACL user holding only what docs/safety.md gives a
// service under a key prefix: the page is enough, and nothing is refused.
func TestLeastACL(t *testing.T) {
	srv := redistest.Start(t)
	read := func(file string) string {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	_, rest, ok := strings.Cut(read("../docs/safety.md"), "\nACL SETUSER ")
	if !ok {
		t.Fatal("docs/safety.md: no ACL SETUSER line")
	}
	var line strings.Builder
	line.WriteString("ACL SETUSER ")
	for l := range strings.Lines(rest) {
		l = strings.TrimRight(l, "\n")
		line.WriteString(strings.TrimSuffix(l, `\`) + " ")
		if !strings.HasSuffix(l, `\`) {
			break
		}
	}
	rules := strings.Fields(strings.NewReplacer("PREFIX", "svc:", "PASSWORD", "pw").Replace(line.String()))
	if err := srv.Do(rules...).Error(); err != nil {
		t.Fatalf("%v: %v", rules, err)
	}
	_ = srv.Do("ACL", "SETUSER", rules[2], "+client|setinfo").Error()
	opt := srv.Option()
	opt.Username, opt.Password = rules[2], "pw"
	r := newRecorder(t)
	a := run(t, r, "a", openAt(t, opt, leasehold.WithKeyPrefix("svc:")), 4)
	b := run(t, r, "b", openAt(t, opt, leasehold.WithKeyPrefix("svc:")), 4)
	settled(t, 10*time.Second, r, 4, a, b)
	if err := a.stop(t); err != nil {
		t.Fatal(err)
	}
	settled(t, 10*time.Second, r, 4, b)
	if log, err := srv.Do("ACL", "LOG").ToArray(); err != nil || len(log) != 0 {
		var refused []string
		for _, e := range log {
			m, _ := e.AsStrMap()
			refused = append(refused, m["reason"]+" "+m["object"])
		}
		t.Fatalf("ACL LOG: %d refusals (%v), %v; want none", len(log), refused, err)
	}
}

// A change whose message a member missed (here the joiner's PUBLISH is
// refused by an ACL) is acted on within a lease: a lone member, with no
// other member's lease to check at, checks once a lease.
func TestMissedMessage(t *testing.T) {
	srv := redistest.Start(t)
	const n = 4
	r := newRecorder(t)
	a := run(t, r, "a", open(t, srv), n)
	settled(t, 10*time.Second, r, n, a)
	time.Sleep(watchdog) // a's checks come once a lease now
	rc, err := rueidis.NewClient(locktest.Denied(t, srv, "publish"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	ctx := ctxTimeout(t, 10*time.Second)
	if g, err := lua.NewGroup("g", n, 0, lua.Config{Lease: time.Minute}).Try(ctx, rc, "silent:1", true); err != nil || !g.Acquired {
		t.Fatalf("the silent join: %+v, %v", g, err)
	}
	start := time.Now()
	// The lease, plus 3s for a loaded machine under -race.
	eventually(t, watchdog+3*time.Second, "a gives the silent joiner its half", func() bool {
		return r.owners()["a"] == n/2 && a.g.Stats().Assigned == n/2
	})
	t.Logf("a acted on a join it was not told of after %v (lease %v)", time.Since(start), watchdog)
}
