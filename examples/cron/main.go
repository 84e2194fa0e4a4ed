// Command cron runs one job every second in three processes, as three
// replicas of a service would, with gocron and leasehold's gocron adapter:
// every replica schedules the job, and each tick runs on one of them.
//
// It starts itself again as -replicas processes, whose schedules are offset
// by up to -splay (0, 100ms and 200ms: what clocks that far apart would do).
// Each opens a Client with a -lease watchdog lease and schedules the job
// "report" every -every, with leaseholdgocron.NewLocker and
// leasehold.WithHoldAtLeast(-hold). A run takes -work, less than the splay:
// without the hold, the replicas behind would find the lock free again and
// run the tick a second and a third time. The run watches
// leaseholdgocron.RunContext, which ends if its lock is lost.
//
// The supervisor reads what each replica runs and skips. When the replica
// that runs tick -kill starts it, the supervisor kills it with SIGKILL, in the
// middle of the run: the lock stays with the dead replica until its lease
// runs out, a tick or so, and the two survivors carry on.
//
// It exits non-zero unless each tick before the kill ran exactly once, with
// the three up; no tick ran twice; and the survivors ran each of the last
// ticks (from two after the kill) exactly once.
//
// It uses the Redis at $REDIS_ADDR, or starts a redis-server of its own on a
// free loopback port and stops it on the way out.
//
//	cd examples/cron && go run .
//	go run . -every 2s -splay 500ms -hold 1s
//
// It is a module of its own (go.mod here), so that leasehold's own module
// never requires gocron: its go.mod is the one a service using the adapter
// writes, less the replace directives that build it against this checkout.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"
	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	leaseholdgocron "github.com/leasehold/leasehold/gocron"
)

var (
	replicas = flag.Int("replicas", 3, "replica processes")
	every    = flag.Duration("every", time.Second, "the job's interval")
	splay    = flag.Duration("splay", 200*time.Millisecond, "how far apart the first and the last replica's schedules are")
	work     = flag.Duration("work", 150*time.Millisecond, "how long a run takes")
	hold     = flag.Duration("hold", 600*time.Millisecond, "WithHoldAtLeast: above the splay, below the interval less the splay")
	lease    = flag.Duration("lease", time.Second, "the watchdog lease: how long a dead replica keeps the lock")
	kill     = flag.Int("kill", 3, "the tick whose run is killed")
	ticks    = flag.Int("ticks", 8, "ticks to run")
	// Set when the supervisor starts a replica.
	replica  = flag.Int("replica", 0, "run as replica `N` (the supervisor sets it)")
	addrFlag = flag.String("addr", "", "Redis address of a replica (the supervisor sets it)")
	offset   = flag.Duration("offset", 0, "a replica's schedule offset (the supervisor sets it)")
)

func main() {
	log.SetFlags(0)
	flag.Parse()
	if *replica > 0 {
		if err := runReplica(*addrFlag); err != nil {
			log.Fatalf("replica %d: %v", *replica, err)
		}
		return
	}
	switch {
	case *replicas < 3:
		log.Fatal("-replicas must be at least 3")
	case *hold <= *splay || *hold >= *every-*splay:
		// Below the splay, the last replica finds the lock free; above the
		// interval less the splay, the next tick of the first finds it kept.
		log.Fatalf("-hold %v must be above -splay %v and below -every %v less the splay", *hold, *splay, *every)
	case *kill < 1 || *kill+4 > *ticks:
		log.Fatal("-kill must be at least 1, and -ticks at least -kill + 4")
	}
	if err := withRedis(supervise); err != nil {
		log.Fatal(err)
	}
}

// runReplica schedules the job, reports each run and skip on stdout, and
// stops on SIGTERM. It reads the time of the first tick from stdin (the
// supervisor writes it once every replica is ready), its schedule starting
// -offset later.
func runReplica(addr string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{addr}},
		leasehold.WithWatchdog(*lease), leasehold.WithClientName("cron-"+strconv.Itoa(*replica)))
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(
		leaseholdgocron.NewLocker(c, leasehold.WithHoldAtLeast(*hold))))
	if err != nil {
		return err
	}
	fmt.Println("ready")
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil {
		return fmt.Errorf("reading the first tick: %w", err)
	}
	ms, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil {
		return err
	}
	first := time.UnixMilli(ms).Add(*offset)
	// tick is the tick of this replica's schedule that t falls in.
	tick := func(t time.Time) int { return int((t.Sub(first) + *every/2) / *every) }

	_, err = s.NewJob(gocron.DurationJob(*every),
		gocron.NewTask(func(ctx context.Context) {
			n := tick(time.Now())
			fmt.Printf("tick %d: run\n", n)
			select {
			case <-time.After(*work):
				fmt.Printf("tick %d: done\n", n)
			case <-leaseholdgocron.RunContext(ctx).Done():
				// The lock is lost (or the scheduler stops): another
				// replica may run the job now, so this one stops.
				fmt.Printf("tick %d: stopped: %v\n", n, context.Cause(leaseholdgocron.RunContext(ctx)))
			}
		}),
		gocron.WithName("report"),
		gocron.WithStartAt(gocron.WithStartDateTime(first)),
		gocron.WithEventListeners(gocron.AfterLockError(func(_ uuid.UUID, _ string, err error) {
			fmt.Printf("tick %d: skipped: %v\n", tick(time.Now()), err)
		})))
	if err != nil {
		return err
	}
	s.Start()
	<-ctx.Done()
	return s.Shutdown()
}

// event is what a replica reported, or its exit (exited set).
type event struct {
	replica int
	text    string
	exited  bool
	err     error
}

// reported reads a replica's report: "tick N: run", "tick N: done", "tick
// N: skipped: ...", "tick N: stopped: ...".
var reported = regexp.MustCompile(`^tick (-?\d+): (run|done|skipped|stopped)`)

// outcome is what happened to one tick.
type outcome struct {
	runs, done, skipped []int // replicas
}

func supervise(addr string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	events := make(chan event)
	procs := make(map[int]*exec.Cmd)
	inputs := make(map[int]*os.File)
	defer func() { // on failure, leave no replica behind
		for _, p := range procs {
			_ = p.Process.Kill()
		}
	}()
	step := *splay / time.Duration(*replicas-1)
	var offsets []string
	for n := 1; n <= *replicas; n++ {
		off := time.Duration(n-1) * step
		offsets = append(offsets, off.String())
		cmd := exec.Command(exe, "-replica", strconv.Itoa(n), "-addr", addr, "-offset", off.String(),
			"-every", every.String(), "-work", work.String(), "-hold", hold.String(), "-lease", lease.String())
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		cmd.Stdin = r
		if err := cmd.Start(); err != nil {
			return err
		}
		r.Close()
		procs[n], inputs[n] = cmd, w
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				events <- event{replica: n, text: sc.Text()}
			}
			events <- event{replica: n, exited: true, err: cmd.Wait()}
		}()
	}
	fmt.Printf("supervisor: %d replicas run %q every %v, their schedules offset by %s; a run takes %v; "+
		"hold at least %v; watchdog lease %v\n",
		*replicas, "report", *every, strings.Join(offsets, ", "), *work, *hold, *lease)

	// Once every replica is ready, the first tick a second later.
	for ready := 0; ready < *replicas; {
		select {
		case e := <-events:
			if e.exited {
				return fmt.Errorf("replica %d exited before it was ready: %v", e.replica, e.err)
			}
			if e.text == "ready" {
				ready++
			}
		case <-time.After(30 * time.Second):
			return errors.New("the replicas were not ready within 30s")
		}
	}
	start := time.Now().Add(time.Second)
	for _, w := range inputs {
		fmt.Fprintln(w, start.UnixMilli())
		w.Close()
	}

	outcomes := make([]outcome, *ticks)
	var killed int
	var failed []string
	end := time.After(time.Until(start.Add(time.Duration(*ticks-1)**every + *splay + *every/2)))
	stopping := false
	for len(procs) > 0 {
		var e event
		select {
		case e = <-events:
		case <-end:
			// The last tick is over: stop the survivors.
			stopping = true
			for _, p := range procs {
				_ = p.Process.Signal(syscall.SIGTERM)
			}
			continue
		}
		if e.exited {
			delete(procs, e.replica)
			if e.replica != killed && (!stopping || e.err != nil) {
				failed = append(failed, fmt.Sprintf("replica %d exited (%v)", e.replica, e.err))
			}
			continue
		}
		m := reported.FindStringSubmatch(e.text)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		if n < 0 || n >= *ticks {
			continue // after the last tick, as the survivors stop
		}
		o := &outcomes[n]
		switch m[2] {
		case "run":
			o.runs = append(o.runs, e.replica)
			if n == *kill && killed == 0 {
				// In the middle of the run: it has just begun.
				_ = procs[e.replica].Process.Kill()
				killed = e.replica
				fmt.Printf("supervisor: kill -9 replica %d in the middle of its run of tick %d\n", killed, n)
			}
		case "done":
			o.done = append(o.done, e.replica)
		case "skipped":
			o.skipped = append(o.skipped, e.replica)
		case "stopped":
			failed = append(failed, fmt.Sprintf("replica %d: tick %d: %s", e.replica, n, e.text))
		}
	}

	for n, o := range outcomes {
		fmt.Println(describe(n, o, killed))
		switch {
		case len(o.runs) > 1:
			failed = append(failed, fmt.Sprintf("tick %d ran %d times", n, len(o.runs)))
		case n < *kill && (len(o.runs) != 1 || len(o.done) != 1 || len(o.skipped) != *replicas-1):
			failed = append(failed, fmt.Sprintf("tick %d, with the %d replicas up, did not run once and skip on the others", n, *replicas))
		case n == *kill && (killed == 0 || len(o.done) != 0):
			failed = append(failed, fmt.Sprintf("tick %d: the run was not killed in its middle", n))
		case n >= *kill+2 && (len(o.runs) != 1 || len(o.done) != 1 || slices.Contains(o.runs, killed)):
			failed = append(failed, fmt.Sprintf("tick %d: the survivors did not run it once", n))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("FAILED: %s", strings.Join(failed, "; "))
	}
	fmt.Printf("ok: ticks 0-%d ran once each with the %d replicas up; tick %d's run was killed; "+
		"the survivors ran ticks %d-%d once each\n", *kill-1, *replicas, *kill, *kill+2, *ticks-1)
	return nil
}

// describe is one tick's line of the summary.
func describe(n int, o outcome, killed int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tick %d: ", n)
	switch len(o.runs) {
	case 0:
		b.WriteString("not run")
		if len(o.skipped) > 0 {
			fmt.Fprintf(&b, ": skipped on %s (the lock was still the killed replica's)", list(o.skipped))
		}
		return b.String()
	case 1:
		fmt.Fprintf(&b, "ran once, on replica %d", o.runs[0])
		if o.runs[0] == killed && len(o.done) == 0 {
			b.WriteString(" (killed mid-run)")
		}
	default:
		fmt.Fprintf(&b, "ran %d times, on replicas %s", len(o.runs), list(o.runs))
	}
	if len(o.skipped) > 0 {
		fmt.Fprintf(&b, "; skipped on %s", list(o.skipped))
	}
	return b.String()
}

// list writes replica numbers as "2, 3".
func list(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range slices.Sorted(slices.Values(ns)) {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
