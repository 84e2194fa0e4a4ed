// Command leader elects one leader among several processes with package
// election, hands leadership over when the leader dies or resigns, and
// watches each term as an observer sees it.
//
// It starts itself again as -candidates processes. Each candidate opens a
// Client with a short watchdog lease (-ttl) and campaigns in the election
// "leader" with its host:pid as the value; the one that wins leads, in a
// term (the lease's fencing token) above every earlier one, until it loses
// the lease or is told to stop. Then this supervisor:
//
//  1. kills the first leader with SIGKILL: it cannot resign, so the next
//     candidate takes over once its lease runs out, at most -ttl later;
//  2. stops each following leader with SIGTERM: it resigns (releases its
//     lease) on the way out, and the next candidate takes over at once,
//     until none is left.
//
// The supervisor is also the observer: on a Client of its own it Observes
// the election and prints each report, the term, its leader's value and,
// when nobody leads, the term that ended. Neither a waiting candidate nor
// the observer polls: both are woken by the resignation or by the expiry of
// the lease, which Redis reports as an invalidation.
//
// It exits non-zero if two candidates led in one term, if the terms did not
// rise (as the candidates or the observer saw them), if the observer did
// not report a term, or if a handover did not happen in time.
//
// It uses the Redis at $REDIS_ADDR, or starts a redis-server of its own on a
// free loopback port and stops it on the way out.
//
//	go run ./examples/leader
//	go run ./examples/leader -candidates 5 -ttl 3s
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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/election"
)

var (
	candidates = flag.Int("candidates", 3, "candidate processes")
	ttl        = flag.Duration("ttl", time.Second, "the watchdog lease: how long a dead leader keeps leading")
	lead       = flag.Duration("lead", 300*time.Millisecond, "how long each leader leads before the supervisor acts")
	// Set when the supervisor starts a candidate.
	candidate = flag.Int("candidate", 0, "run as candidate `N` (the supervisor sets it)")
	addrFlag  = flag.String("addr", "", "Redis address of a candidate (the supervisor sets it)")
)

func main() {
	log.SetFlags(0)
	flag.Parse()
	if *candidate > 0 {
		if err := runCandidate(*addrFlag); err != nil {
			log.Fatalf("candidate %d: %v", *candidate, err)
		}
		return
	}
	if *candidates < 3 {
		log.Fatal("-candidates must be at least 3")
	}
	if err := withRedis(supervise); err != nil {
		log.Fatal(err)
	}
}

// value is what a candidate publishes as the leader's: its host and pid.
func value(pid int) string {
	host, _ := os.Hostname()
	return host + ":" + strconv.Itoa(pid)
}

// runCandidate campaigns, leads until the lease is lost or a signal says
// stop, and reports each step on stdout for the supervisor.
func runCandidate(addr string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{addr}}, leasehold.WithWatchdog(*ttl))
	if err != nil {
		return err
	}
	defer c.Close()

	fmt.Println("campaigning")
	me := value(os.Getpid())
	ls, err := election.New(c, "leader").Campaign(ctx, me)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Println("stopped while campaigning")
			return nil
		}
		return err
	}
	fmt.Printf("leader in term %d as %s\n", ls.Token(), me)
	select {
	case <-ls.Lost():
		// Someone else may lead now: stop leading at once.
		fmt.Printf("lost: %v\n", ls.Err())
		return ls.Err()
	case <-ctx.Done():
		err := ls.Release(context.Background())
		fmt.Printf("resigned (%v)\n", errOrOK(err))
		return err
	}
}

func errOrOK(err error) string {
	if err != nil {
		return err.Error()
	}
	return "ok"
}

// line is a line a candidate wrote, or its exit (exited set).
type line struct {
	id     int
	text   string
	exited bool
	err    error
}

func supervise(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // bounds the whole run
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	// The observer's Client, and its reports from before any candidate
	// runs: nobody leads yet, so the first report is the first term.
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		return err
	}
	defer c.Close()
	octx, stopObserving := context.WithCancel(ctx)
	defer stopObserving()
	reports := election.New(c, "leader").Observe(octx)

	lines := make(chan line)
	procs := make(map[int]*exec.Cmd)
	byValue := make(map[string]int) // candidate by the value it campaigns with
	// On failure, leave no candidate behind.
	defer func() {
		for _, p := range procs {
			_ = p.Process.Kill()
		}
	}()
	for id := 1; id <= *candidates; id++ {
		cmd := exec.Command(exe, "-candidate", strconv.Itoa(id), "-addr", addr, "-ttl", ttl.String())
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		procs[id] = cmd
		byValue[value(cmd.Process.Pid)] = id
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- line{id: id, text: sc.Text()}
			}
			lines <- line{id: id, exited: true, err: cmd.Wait()}
		}()
	}
	fmt.Printf("supervisor: started %d candidates; watchdog lease %v\n", *candidates, *ttl)

	var (
		leader int                    // the candidate leading now, 0 for none
		term   uint64                 // the latest term a candidate led in
		ledBy  = make(map[uint64]int) // the candidate that led in each term
		failed []string

		seen     election.Leader           // the observer's latest report
		reported = make(map[uint64]string) // the value the observer saw in each term
		act      string                    // the supervisor's latest act, until the observer reports its effect
		acted    time.Time
	)
	// relay prints a candidate's line and follows who leads. It returns the
	// candidate that became leader, if the line says so.
	relay := func(l line) int {
		if l.exited {
			delete(procs, l.id)
			fmt.Printf("candidate %d: exited (%v)\n", l.id, errOrOK(l.err))
			return 0
		}
		fmt.Printf("candidate %d: %s\n", l.id, l.text)
		var tok uint64
		var v string
		if _, err := fmt.Sscanf(l.text, "leader in term %d as %s", &tok, &v); err != nil {
			return 0
		}
		if other, ok := ledBy[tok]; ok {
			failed = append(failed, fmt.Sprintf("candidates %d and %d led in term %d", other, l.id, tok))
		}
		if leader != 0 {
			failed = append(failed, fmt.Sprintf("candidate %d led while candidate %d did", l.id, leader))
		}
		if tok <= term {
			failed = append(failed, fmt.Sprintf("term %d after term %d", tok, term))
		}
		ledBy[tok] = l.id
		leader, term = l.id, tok
		return l.id
	}
	// observe prints an observer's report, with how long after the
	// supervisor's act it came, if it is the first since.
	observe := func(l election.Leader, ok bool) {
		if !ok { // Observe ended: ctx is done
			reports = nil
			failed = append(failed, "the observer's channel closed")
			return
		}
		if l.Token < seen.Token {
			failed = append(failed, fmt.Sprintf("the observer reported term %d after term %d", l.Token, seen.Token))
		}
		seen = l
		after := ""
		if act != "" {
			after = fmt.Sprintf(", %v after the %s", time.Since(acted).Round(time.Millisecond), act)
			act = ""
		}
		if l.Owner == "" {
			fmt.Printf("observer: nobody leads since term %d%s\n", l.Token, after)
			return
		}
		if v, ok := reported[l.Token]; ok && v != l.Value {
			failed = append(failed, fmt.Sprintf("the observer saw %s and %s lead in term %d", v, l.Value, l.Token))
		}
		reported[l.Token] = l.Value
		fmt.Printf("observer: term %d: %s leads (candidate %d%s)\n", l.Token, l.Value, byValue[l.Value], after)
	}
	// next relays lines and reports until a candidate becomes leader.
	next := func(within time.Duration) (int, error) {
		deadline := time.After(within)
		for {
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-deadline:
				return 0, fmt.Errorf("no new leader within %v", within)
			case l := <-lines:
				if id := relay(l); id != 0 {
					return id, nil
				}
			case r, ok := <-reports:
				observe(r, ok)
			}
		}
	}
	// hold relays lines and reports while the leader leads.
	hold := func() {
		for t := time.After(*lead); ; {
			select {
			case l := <-lines:
				relay(l)
			case r, ok := <-reports:
				observe(r, ok)
			case <-t:
				return
			}
		}
	}
	alive := len(procs) // candidates the supervisor has not killed or stopped

	first, err := next(10 * time.Second)
	if err != nil {
		return err
	}
	hold()
	fmt.Printf("supervisor: kill -9 candidate %d; it cannot resign, so its lease has to run out\n", first)
	act, acted = "kill", time.Now()
	_ = procs[first].Process.Kill()
	leader, alive = 0, alive-1 // dead, whatever Redis still says
	id, err := next(*ttl + 5*time.Second)
	if err != nil {
		return err
	}
	took := time.Since(acted)
	fmt.Printf("supervisor: candidate %d took over %v after the kill (lease %v)\n", id, took.Round(time.Millisecond), *ttl)
	if took > *ttl+2*time.Second {
		failed = append(failed, fmt.Sprintf("handover after a kill took %v, lease %v", took, *ttl))
	}

	for {
		hold()
		fmt.Printf("supervisor: SIGTERM to candidate %d; it resigns on the way out\n", leader)
		act, acted = "SIGTERM", time.Now()
		_ = procs[leader].Process.Signal(syscall.SIGTERM)
		leader, alive = 0, alive-1
		if alive == 0 {
			break
		}
		id, err := next(5 * time.Second)
		if err != nil {
			return err
		}
		took := time.Since(acted)
		fmt.Printf("supervisor: candidate %d took over %v after the SIGTERM\n", id, took.Round(time.Millisecond))
		if took >= *ttl {
			failed = append(failed, fmt.Sprintf("handover after a resignation took %v: as long as the lease", took))
		}
	}
	// The candidates exit, and the observer reports that nobody leads.
	for deadline := time.After(10 * time.Second); len(procs) > 0 || seen.Owner != "" || seen.Token != term; {
		select {
		case l := <-lines:
			relay(l)
		case r, ok := <-reports:
			observe(r, ok)
		case <-deadline:
			return fmt.Errorf("%d candidates did not exit, or the observer did not report the end of term %d", len(procs), term)
		}
	}
	for tok, id := range ledBy {
		if v, ok := reported[tok]; !ok || byValue[v] != id {
			failed = append(failed, fmt.Sprintf("the observer did not report candidate %d leading in term %d", id, tok))
		}
	}
	if len(failed) > 0 {
		return errors.New("FAILED: " + strings.Join(failed, "; "))
	}
	fmt.Printf("ok: one leader in each of %d terms, rising; handed over on a kill and on each resignation; the observer saw every term\n", len(ledBy))
	return nil
}
