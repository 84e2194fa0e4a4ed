package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"go.uber.org/goleak"

	"github.com/leasehold/leasehold/internal/harness/redistest"
)

var longFlag = flag.Bool("long", false, "run the long form of the fault tests (also LEASEHOLD_CHAOS_LONG=1)")

// long reports whether the long form runs: more workers, more faults, more time.
func long() bool { return *longFlag || os.Getenv("LEASEHOLD_CHAOS_LONG") == "1" }

// pick is short in the short form, lng in the long one.
func pick[T any](short, lng T) T {
	if long() {
		return lng
	}
	return short
}

func TestMain(m *testing.M) {
	if cfg := os.Getenv(WorkerEnv); cfg != "" {
		os.Exit(workerMain(cfg))
	}
	if cfg := os.Getenv(fencedWorkerEnv); cfg != "" {
		os.Exit(fencedWorkerMain(cfg))
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		totals.print(os.Stderr, code)
		os.Exit(code)
	}))
}

// workerMain is the test binary run as a worker process.
func workerMain(js string) int {
	var cfg WorkerConfig
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "chaos worker:", err)
		return 2
	}
	if err := RunWorker(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "chaos worker:", err)
		return 1
	}
	return 0
}

// totals are the figures of the whole run, printed when it ends.
var totals = &figures{faults: map[string]int{}, margins: map[string][]time.Duration{}, lives: map[Rule]*Liveness{}}

type figures struct {
	mu                                   sync.Mutex
	acquisitions, waits, writes, refused int
	overlaps, guarded, unguarded, lost   int
	violations, leaked, workers          int
	documented                           int // unguarded overlaps in the documented loss case
	observers, reports, terms            int // of election observers
	linearOps, linearChecks              int // porcupine's
	linearBad                            int // histories it did not find linearizable
	maxOverrun                           time.Duration
	twoHolders                           []time.Duration // in Sentinel split brains without WithReplicas
	stepHeard                            []time.Duration // from a server clock step to the holder's Lost
	faults                               map[string]int
	margins                              map[string][]time.Duration
	lives                                map[Rule]*Liveness // summed over the run
	// Of partition groups (CheckOwned): their partitions, the takeovers
	// after faults that struck members, the times from a heal to every
	// partition run again, the longest a partition was run nowhere
	// outside the faults.
	groupParts, groupFns         int
	takeovers, runAgain, stalled []time.Duration
	longestGap                   time.Duration
}

func (f *figures) fault(kind string, n int) {
	f.mu.Lock()
	f.faults[kind] += n
	f.mu.Unlock()
}

// margin records how long before the lock's server-side TTL ended its
// holder's lease was lost (negative: after).
func (f *figures) margin(kind string, d time.Duration) {
	f.mu.Lock()
	f.margins[kind] = append(f.margins[kind], d)
	f.mu.Unlock()
}

func (f *figures) observed(o *Observation) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.observers += o.Observers
	f.reports += o.Reports
	f.terms += o.Terms
	f.violations += len(o.Violations)
}

func (f *figures) linear(l *Linearity) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.linearChecks++
	f.linearOps += l.Ops
	if l.Result != porcupine.Ok {
		f.linearBad++
	}
}

// live adds a rig's liveness to its rule's.
func (f *figures) live(l *Liveness) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.lives[l.Rule]
	if t == nil {
		t = &Liveness{Rule: l.Rule}
		f.lives[l.Rule] = t
	}
	t.Add(l)
}

// owned adds a partition group's ownership to the figures.
func (f *figures) owned(o *Ownership) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.groupParts += o.Parts
	f.groupFns += o.Runs
	for _, t := range o.Takeovers {
		// Never (-1): a violation, counted as one.
		if t.Victims > 0 && t.Taken >= 0 {
			f.takeovers = append(f.takeovers, t.Taken)
		}
		if t.Again >= 0 {
			f.runAgain = append(f.runAgain, t.Again)
		}
		f.stalled = append(f.stalled, t.Stalled)
	}
	f.longestGap = max(f.longestGap, o.LongestGap)
	f.violations += len(o.Violations)
}

func (f *figures) splitBrain(d time.Duration) {
	f.mu.Lock()
	f.twoHolders = append(f.twoHolders, d)
	f.mu.Unlock()
}

func (f *figures) clockStep(d time.Duration) {
	f.mu.Lock()
	f.stepHeard = append(f.stepHeard, d)
	f.mu.Unlock()
}

func (f *figures) add(r *Report) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acquisitions += r.Acquisitions
	f.waits += r.Waits
	f.writes += r.Writes
	f.refused += r.Refused
	f.overlaps += r.Overlaps
	f.guarded += r.Guarded
	f.unguarded += len(r.Unguarded)
	f.lost += r.Lost
	f.violations += len(r.Violations())
	f.maxOverrun = max(f.maxOverrun, r.MaxWaitOverrun)
}

func (f *figures) print(w io.Writer, code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.acquisitions == 0 && len(f.faults) == 0 {
		return // no fault test ran (-run, -fuzz)
	}
	form := "short"
	if long() {
		form = "long"
	}
	fmt.Fprintf(w, "chaos figures (%s form):\n", form)
	fmt.Fprintf(w, "  acquisitions checked: %d (waits %d, latest return %v past a ctx deadline)\n", f.acquisitions, f.waits, f.maxOverrun.Round(time.Millisecond))
	fmt.Fprintf(w, "  fenced writes: %d, refused by the fence: %d; leases lost while held: %d\n", f.writes, f.refused, f.lost)
	fmt.Fprintf(w, "  overlapping sections: %d, guarded by the fence: %d, unguarded: %d; violations: %d\n", f.overlaps, f.guarded, f.unguarded, f.violations)
	if f.linearChecks > 0 {
		fmt.Fprintf(w, "  porcupine: %d histories, %d accesses to the fenced resource; not linearizable: %d\n", f.linearChecks, f.linearOps, f.linearBad)
	}
	for _, rule := range []Rule{Turns, FIFO, Unruled} {
		if l := f.lives[rule]; l != nil {
			fmt.Fprintf(w, "  %v\n", l)
		}
	}
	if f.groupParts > 0 {
		fmt.Fprintf(w, "  partition groups: %d partitions, %d fns; a struck member's partitions run by the others after: %s\n", f.groupParts, f.groupFns, spread(f.takeovers))
		fmt.Fprintf(w, "    every partition run again after a heal: %s; the longest one was run nowhere in a fault: %s; outside the faults: %v\n",
			spread(f.runAgain), spread(f.stalled), f.longestGap.Round(time.Millisecond))
	}
	if f.observers > 0 {
		fmt.Fprintf(w, "  election observers: %d, reports received: %d, terms reported with a leader: %d\n", f.observers, f.reports, f.terms)
	}
	if f.documented > 0 {
		fmt.Fprintf(w, "  unguarded overlaps where the loss is documented (one server restarted empty, a Sentinel failover or split brain without WithReplicas, a server clock stepped forward): %d\n", f.documented)
	}
	if len(f.twoHolders) > 0 {
		fmt.Fprintf(w, "  two holders in a Sentinel split brain without WithReplicas: %v\n", f.twoHolders)
	}
	if len(f.stepHeard) > 0 {
		fmt.Fprintf(w, "  a holder heard the expiry a server clock step forward caused after: %v\n", f.stepHeard)
	}
	kinds := make([]string, 0, len(f.faults))
	for k := range f.faults {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(w, "  faults %-28s %d\n", k+":", f.faults[k])
	}
	kinds = kinds[:0]
	for k := range f.margins {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		ms := slices.Clone(f.margins[k])
		slices.Sort(ms)
		fmt.Fprintf(w, "  lost-lease margin %-20s n=%d min %v median %v max %v (before the server-side TTL end)\n",
			k+":", len(ms), ms[0].Round(100*time.Microsecond), ms[len(ms)/2].Round(100*time.Microsecond), ms[len(ms)-1].Round(100*time.Microsecond))
	}
	leak := "0 in the test process"
	if code != 0 {
		leak = "see goleak above, if any"
	}
	fmt.Fprintf(w, "  goroutines leaked: %d in %d worker processes, %s\n", f.leaked, f.workers, leak)
}

// spread is the least, the median and the most of ds, and how many.
func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("n=%d min %v median %v max %v", len(ds), r(ds[0]), r(ds[len(ds)/2]), r(ds[len(ds)-1]))
}

// rig runs worker processes against a lock and a fenced resource, injects
// faults into them, and checks what they did.
type rig struct {
	t        *testing.T
	dir      string
	base     WorkerConfig
	resource *Resource

	mu       sync.Mutex
	procs    []*proc
	killed   map[string]bool
	finished map[string]bool // told to stop before the end

	observing bool // an observer process runs: check checks its reports

	faults *schedule // the test's, shared by its rigs
	// racing: no Client passes the lock among its goroutines (a Redis
	// Cluster whose messages are classic PUBLISH, before Redis 7), so an
	// rlock's waiters race for it and no bound is stated.
	racing bool
}

// schedule is the faults a test injected, shared by every rig of the test:
// a fault of a server, or of the network, reaches every lock on it.
type schedule struct {
	mu     sync.Mutex
	faults []Fault
}

// schedules holds each running test's schedule.
var schedules sync.Map // *testing.T -> *schedule

// scheduleOf is t's schedule, made at its first rig.
func scheduleOf(t *testing.T) *schedule {
	s, loaded := schedules.LoadOrStore(t, &schedule{})
	if !loaded {
		t.Cleanup(func() { schedules.Delete(t) })
	}
	return s.(*schedule)
}

// injected is a fault in a schedule, to be marked healed.
type injected struct {
	s *schedule
	i int
}

// fault records n faults of kind in the figures, and one fault injected
// now in the test's schedule: the waits it overlaps, until its heal and
// the settle time after it, are exempt from the liveness check.
func (r *rig) fault(kind string, n int) injected {
	totals.fault(kind, n)
	return r.note(kind)
}

// note records a fault injected now in the test's schedule only: one of a
// checker's own tests, not counted in the figures.
func (r *rig) note(kind string) injected {
	s := r.faults
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, Fault{Kind: kind, From: Now()})
	return injected{s, len(s.faults) - 1}
}

// heal marks the fault over: undone, or seen over by the test. A fault
// never healed lasts until the run's end.
func (f injected) heal() {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	f.s.faults[f.i].Healed = Now()
}

// proc is one worker process.
type proc struct {
	id     string
	cfg    WorkerConfig
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	exited chan struct{}
	state  *os.ProcessState
	// started is when it was started, ended when it exited (read once
	// exited is closed).
	started, ended Mono
}

// newRig starts the resource's own redis-server. base is every worker's
// configuration, less Process and Out.
func newRig(t *testing.T, base WorkerConfig) *rig {
	if testing.Short() {
		t.Skip("-short: the fault suite's worker processes run without it")
	}
	t.Helper()
	// The socket's path must fit in 108 bytes: not under t.TempDir().
	sock, err := os.MkdirTemp("", "lhres")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sock) })
	sock = filepath.Join(sock, "redis.sock")
	res := redistest.Start(t, "--unixsocket", sock, "--unixsocketperm", "700")
	r := &rig{t: t, dir: t.TempDir(), base: base, killed: map[string]bool{}, finished: map[string]bool{},
		resource: NewResource(res.Client(), base.Name), faults: scheduleOf(t)}
	r.base.Resource = sock
	if r.base.Max == 0 {
		r.base.Max = 10 * time.Minute
	}
	t.Cleanup(r.reap)
	return r
}

// defaults fills in a worker configuration's usual values.
func defaults(kind, name string, addrs ...string) WorkerConfig {
	return WorkerConfig{
		Kind:       kind,
		Name:       name,
		Addrs:      addrs,
		Goroutines: 3,
		// 900ms: short enough that faults pass quickly, long enough that a
		// loaded 2-core machine under -race renews well in time (every 300ms).
		Watchdog:    900 * time.Millisecond,
		Hold:        20 * time.Millisecond,
		Think:       2 * time.Millisecond,
		Wait:        3 * time.Second,
		NodeTimeout: 300 * time.Millisecond,
	}
}

// spawn starts a worker process named id, its configuration changed by mod.
func (r *rig) spawn(id string, mod func(*WorkerConfig)) *proc {
	r.t.Helper()
	return r.spawnIn(nil, id, mod)
}

// spawnIn is spawn in the network namespace ns, or the test's own if nil.
func (r *rig) spawnIn(ns *netns, id string, mod func(*WorkerConfig)) *proc {
	r.t.Helper()
	cfg := r.base
	cfg.Addrs = slices.Clone(cfg.Addrs)
	cfg.Process, cfg.Out = id, filepath.Join(r.dir, id+".jsonl")
	if mod != nil {
		mod(&cfg)
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if ns != nil {
		cmd = ns.Command(os.Args[0], "-test.run=^$")
	}
	cmd.Env = append(os.Environ(), WorkerEnv+"="+string(js))
	logf, err := os.Create(filepath.Join(r.dir, id+".log"))
	if err != nil {
		r.t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	stdin, err := cmd.StdinPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	p := &proc{id: id, cfg: cfg, cmd: cmd, stdin: stdin, exited: make(chan struct{}), started: Now()}
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); p.ended, p.state = Now(), cmd.ProcessState; close(p.exited) }()
	r.mu.Lock()
	r.procs = append(r.procs, p)
	r.mu.Unlock()
	return p
}

// spawnN starts n workers named prefix0, prefix1...
func (r *rig) spawnN(prefix string, n int, mod func(*WorkerConfig)) []*proc {
	ps := make([]*proc, n)
	for i := range ps {
		ps[i] = r.spawn(prefix+strconv.Itoa(i), mod)
	}
	return ps
}

// finish tells p to stop (it closes its stdin) and waits for it to exit.
func (r *rig) finish(p *proc) {
	r.t.Helper()
	r.mu.Lock()
	r.finished[p.id] = true
	r.mu.Unlock()
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		r.t.Fatalf("worker %s did not stop in 30s", p.id)
	}
}

// kill sends SIGKILL (kill -9) to p and waits for it to die.
func (r *rig) kill(p *proc) {
	r.mu.Lock()
	r.killed[p.id] = true
	r.mu.Unlock()
	_ = p.cmd.Process.Signal(syscall.SIGCONT) // a stopped process must run to die
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// signal sends sig (SIGSTOP, SIGCONT) to p.
func (r *rig) signal(p *proc, sig syscall.Signal) {
	if err := p.cmd.Process.Signal(sig); err != nil {
		r.t.Fatalf("%s: %v", p.id, err)
	}
}

// stop tells every live worker to finish (it closes their stdin) and waits
// for them: each ends its section, releases, closes its Clients and writes
// its summary. A worker that does not end in 30s fails the test.
func (r *rig) stop() {
	r.t.Helper()
	r.mu.Lock()
	ps := slices.Clone(r.procs)
	r.mu.Unlock()
	for _, p := range ps {
		_ = p.stdin.Close()
	}
	for _, p := range ps {
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
			r.t.Errorf("worker %s did not stop in 30s", p.id)
		}
		if !r.killed[p.id] && !p.state.Success() {
			out, _ := os.ReadFile(filepath.Join(r.dir, p.id+".log"))
			r.t.Errorf("worker %s: %v\n%s", p.id, p.state, out)
		}
	}
}

// alive fails the test if a worker not killed on purpose has exited.
func (r *rig) alive() {
	r.t.Helper()
	r.mu.Lock()
	ps := slices.Clone(r.procs)
	r.mu.Unlock()
	for _, p := range ps {
		select {
		case <-p.exited:
			r.mu.Lock()
			expected := r.killed[p.id] || r.finished[p.id]
			r.mu.Unlock()
			if !expected {
				out, _ := os.ReadFile(filepath.Join(r.dir, p.id+".log"))
				r.t.Fatalf("worker %s exited: %v\n%s", p.id, p.state, out)
			}
		default:
		}
	}
}

// reap kills whatever worker is still running when the test ends (a failed test).
func (r *rig) reap() {
	r.mu.Lock()
	ps := slices.Clone(r.procs)
	r.mu.Unlock()
	for _, p := range ps {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// writes is the number of writes the resource has accepted so far.
func (r *rig) writes() int64 {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := r.resource.Len(ctx)
	if err != nil {
		r.t.Fatalf("resource: %v", err)
	}
	return n
}

// progress waits until the resource has accepted n more writes than it had
// at from, and fails the test if that takes longer than d.
func (r *rig) progress(from, n int64, d time.Duration, what string) {
	r.t.Helper()
	r.await(d, fmt.Sprintf("%d accepted writes (%s)", n, what), func(a Accepted) bool { return true }, from, int(n))
}

// await polls the resource's log from index from until count entries match
// ok, and returns the last of them. It fails the test after d.
func (r *rig) await(d time.Duration, what string, ok func(Accepted) bool, from int64, count int) Accepted {
	r.t.Helper()
	deadline := time.Now().Add(d)
	seen := 0
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		es, err := r.resource.Since(ctx, from)
		cancel()
		if err != nil {
			r.t.Fatalf("resource: %v", err)
		}
		from += int64(len(es))
		for _, e := range es {
			if ok(e) {
				if seen++; seen >= count {
					return e
				}
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("after %v: no %s", d, what)
		}
		r.alive()
		time.Sleep(2 * time.Millisecond)
	}
}

// log reads the resource's log of accepted writes.
func (r *rig) log() []Accepted {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	log, err := r.resource.Log(ctx)
	if err != nil {
		r.t.Fatalf("resource: %v", err)
	}
	return log
}

// startServer starts a redis-server for the lock.
func startServer(t *testing.T) *redistest.Server { return redistest.Start(t) }

// records reads every worker's records.
func (r *rig) records() (secs []Section, waits []Wait, sums map[string]*Summary) {
	r.t.Helper()
	sums = map[string]*Summary{}
	r.scan(func(rec Record) {
		switch {
		case rec.Section != nil:
			secs = append(secs, *rec.Section)
		case rec.Wait != nil:
			waits = append(waits, *rec.Wait)
		case rec.Summary != nil:
			sums[rec.Summary.Process] = rec.Summary
		}
	})
	return secs, waits, sums
}

// observed reads the reports election observers received, each
// observer's in the order received.
func (r *rig) observed() []Observed {
	r.t.Helper()
	var obs []Observed
	r.scan(func(rec Record) {
		if rec.Observed != nil {
			obs = append(obs, *rec.Observed)
		}
	})
	return obs
}

// scan calls f with every record of every worker, each worker's in order.
func (r *rig) scan(f func(Record)) {
	r.t.Helper()
	files, _ := filepath.Glob(filepath.Join(r.dir, "*.jsonl"))
	for _, name := range files {
		file, err := os.Open(name)
		if err != nil {
			r.t.Fatal(err)
		}
		sc := bufio.NewScanner(file)
		// A partition group's fn is one section, with every access it
		// made: a long one is a long line.
		sc.Buffer(make([]byte, 1<<20), 1<<28)
		for sc.Scan() {
			var rec Record
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				// A worker killed mid-write leaves a torn last line.
				continue
			}
			f(rec)
		}
		file.Close()
	}
}

// observe starts, for an election, a worker process that only observes it,
// on two Observe channels of one Client; check then checks the reports
// they received (CheckObserved).
func (r *rig) observe() {
	r.t.Helper()
	if r.base.Kind != KindElection {
		return
	}
	r.spawn("observer", func(c *WorkerConfig) { c.Goroutines, c.Observers = 0, 2 })
	r.observing = true
}

// check stops the workers, replays their records against the resource's log,
// fails the test on any violation, and adds the figures to the totals.
func (r *rig) check(waitSlack time.Duration) (*Report, []Section) {
	r.t.Helper()
	return r.checkWith(waitSlack, false)
}

// checkWith is check; with lossExpected, overlaps the fence did not stop are
// the documented loss of the lock (a single server restarted without
// persistence, a failover to a replica that had not received it): they are
// logged and counted apart, not failed. Tokens reused or accepted out of
// order fail either way: tokens never go back, even when the lock is lost.
func (r *rig) checkWith(waitSlack time.Duration, lossExpected bool) (*Report, []Section) {
	r.t.Helper()
	r.stop()
	secs, waits, sums := r.records()
	log := r.log()
	rep := Check(Input{Sections: secs, Waits: waits, Log: log, Killed: r.killed, WaitSlack: waitSlack})
	r.t.Logf("checked: %v", rep)
	if lossExpected {
		r.t.Logf("%d unguarded overlaps in the documented loss", len(rep.Unguarded))
		for i, v := range rep.Unguarded {
			if i == 3 {
				r.t.Logf("... and %d more", len(rep.Unguarded)-3)
				break
			}
			r.t.Logf("documented loss: %s", v)
		}
		totals.mu.Lock()
		totals.documented += len(rep.Unguarded)
		totals.mu.Unlock()
		rep.Unguarded = nil
	}
	r.linear(secs, log)
	r.live(waits, log)
	for i, v := range rep.Violations() {
		if i == 20 {
			r.t.Errorf("... and %d more", len(rep.Violations())-20)
			break
		}
		r.t.Errorf("violation: %s", v)
	}
	if rep.Acquisitions == 0 {
		r.t.Error("no acquisition was made")
	}
	if r.observing {
		o := CheckObserved(r.observed(), secs)
		r.t.Logf("observed: %v", o)
		for _, v := range o.Violations {
			r.t.Errorf("observer: %s", v)
		}
		if o.Observers == 0 {
			r.t.Error("the observers received no report")
		}
		totals.observed(o)
	}
	totals.add(rep)
	r.summaries(sums)
	return rep, secs
}

// settleSlack is how long, beyond the longest lease of a rig's workers, a
// fault may hold waiters up after its heal: Clients reconnect, subscribe
// again and find a new primary on a loaded machine.
const settleSlack = 2 * time.Second

// rule is the liveness rule of the rig's kind: rlock's turns, unless no
// Client passes the lock among its goroutines (WithReplicas, or racing:
// then its waiters race for it); fairqueue's FIFO; the other kinds state
// no bound.
func (r *rig) rule() Rule {
	switch {
	case r.base.Kind == KindRLock && r.base.Replicas == 0 && !r.racing:
		return Turns
	case r.base.Kind == KindFair:
		return FIFO
	}
	return Unruled
}

// live checks the liveness of the workers' waits (CheckLive) under the
// rig's rule, outside the faults of the test's schedule, logs the longest,
// fails the test for each wait past its bound, and adds the figures to the
// totals. Every worker has exited.
func (r *rig) live(waits []Wait, log []Accepted) *Liveness {
	r.t.Helper()
	r.mu.Lock()
	ps := slices.Clone(r.procs)
	r.mu.Unlock()
	procs := make([]Proc, 0, len(ps))
	var lease time.Duration
	for _, p := range ps {
		lease = max(lease, p.cfg.Watchdog)
		pr := Proc{ID: p.id, Goroutines: p.cfg.Goroutines, Hold: p.cfg.Hold, From: p.started}
		select {
		case <-p.exited:
			pr.To = p.ended
		default:
		}
		procs = append(procs, pr)
	}
	r.faults.mu.Lock()
	faults := slices.Clone(r.faults.faults)
	r.faults.mu.Unlock()
	l := CheckLive(LiveInput{Rule: r.rule(), Waits: waits, Log: log, Procs: procs, Faults: faults, Settle: lease + settleSlack, End: Now()})
	r.t.Logf("%v", l)
	for i, v := range l.Violations() {
		if i == 20 {
			r.t.Errorf("... and %d more", len(l.Violations())-20)
			break
		}
		r.t.Errorf("liveness: %s", v)
	}
	totals.live(l)
	return l
}

// linearTimeout is how long porcupine may search before it gives up
// (Unknown, which fails the test too): histories of the fault suite are
// nearly sequential and take it well under a second.
const linearTimeout = 2 * time.Minute

// linear checks the resource's history with porcupine (CheckLinear) and
// fails the test unless it is linearizable; an Illegal one is drawn to
// linear.html in the test's directory, which is kept. A semaphore's
// sections share token 0 and run at once by design: its history is not one
// of exclusive sections, and CheckBound checks it instead.
func (r *rig) linear(secs []Section, log []Accepted) {
	r.t.Helper()
	if r.base.Kind == KindSemaphore {
		return
	}
	lin := CheckLinear(secs, log, linearTimeout)
	r.t.Logf("%v", lin)
	totals.linear(lin)
	if lin.Result != porcupine.Ok {
		path := filepath.Join(os.TempDir(), fmt.Sprintf("leasehold-linear-%s-%d.html", r.base.Name, os.Getpid()))
		if err := lin.Visualize(path); err != nil {
			path = err.Error()
		}
		r.t.Errorf("the resource's history is not linearizable: %v (see %s)", lin, path)
	}
}

// summaries fails the test for each worker not killed that wrote no summary
// or leaked goroutines, and adds the leaks to the totals.
func (r *rig) summaries(sums map[string]*Summary) {
	r.t.Helper()
	leaked := 0
	for _, p := range r.procs {
		if r.killed[p.id] {
			continue
		}
		s := sums[p.id]
		switch {
		case s == nil:
			r.t.Errorf("worker %s wrote no summary", p.id)
		case s.Leaked > 0:
			leaked += s.Leaked
			r.t.Errorf("worker %s leaked %d goroutines:\n%s", p.id, s.Leaked, s.LeakInfo)
		}
	}
	totals.mu.Lock()
	totals.leaked += leaked
	totals.workers += len(r.procs)
	totals.mu.Unlock()
}

// section finds the record of section id (as the resource logs it) with token.
func section(t *testing.T, secs []Section, id string, token uint64) *Section {
	t.Helper()
	for i := range secs {
		if secs[i].ID == id && secs[i].Token == token {
			return &secs[i]
		}
	}
	t.Fatalf("no record of section %s with token %d", id, token)
	return nil
}

// ended reports whether the section id (as the resource logs it) with
// token has ended: its record is written once it has released.
func (r *rig) ended(id string, token uint64) bool {
	r.t.Helper()
	found := false
	r.scan(func(rec Record) {
		found = found || rec.Section != nil && rec.Section.ID == id && rec.Section.Token == token
	})
	return found
}

// ready waits until each of ps has entered a critical section: every worker
// is up, so that a fault finds them all at work.
func (r *rig) ready(ps ...*proc) {
	r.t.Helper()
	for _, p := range ps {
		r.await(60*time.Second, "enter by "+p.id, enterOf(p.id), 0, 1)
	}
}

// enterOf matches the enter writes of a process.
func enterOf(id string) func(Accepted) bool {
	return func(a Accepted) bool { return a.Phase == "enter" && process(a.Holder) == id }
}

// waitSlack is how late past its ctx deadline an Acquire may return on a
// loaded 2-core machine under -race before it counts as late: scheduling,
// not a wait for Redis.
const waitSlack = 500 * time.Millisecond

func itoa(i int) string { return strconv.Itoa(i) }

// eventually polls cond every few ms until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
