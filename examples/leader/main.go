// Command leader elects one leader among several processes with a lock, and
// hands leadership over when the leader dies.
//
// It starts itself again as -candidates processes. Each candidate opens a
// Client with a short watchdog lease (-ttl) and waits for the lock "leader";
// the one that holds it leads, until it loses the lease or is told to stop.
// Then this supervisor:
//
//  1. kills the first leader with SIGKILL: it cannot release, so the next
//     candidate takes over once its lease runs out, at most -ttl later;
//  2. stops each following leader with SIGTERM: it releases the lock on the
//     way out, and the next candidate takes over at once, until none is
//     left.
//
// A waiting candidate does not poll: it is woken by the release, or by the
// expiry of the lock key, which Redis reports to it as an invalidation.
//
// It exits non-zero if two candidates ever led at once, if a handover did
// not happen in time, or if the fencing tokens did not rise.
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
	"github.com/leasehold/leasehold/rlock"
)

var (
	candidates = flag.Int("candidates", 3, "candidate processes")
	ttl        = flag.Duration("ttl", time.Second, "the watchdog lease: how long a dead leader keeps the lock")
	lead       = flag.Duration("lead", 300*time.Millisecond, "how long each leader leads before the supervisor acts")
	// Set when the supervisor starts a candidate.
	candidate = flag.Int("candidate", 0, "run as candidate `N` (the supervisor sets it)")
	addrFlag  = flag.String("addr", "", "Redis address of a candidate (the supervisor sets it)")
)

func main() {
	log.SetFlags(0)
	flag.Parse()
	if *candidate > 0 {
		if err := runCandidate(*candidate, *addrFlag); err != nil {
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

// runCandidate waits for leadership, leads until the lease is lost or a
// signal says stop, and reports each step on stdout for the supervisor.
func runCandidate(id int, addr string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{addr}}, leasehold.WithWatchdog(*ttl))
	if err != nil {
		return err
	}
	defer c.Close()

	fmt.Println("waiting")
	l, err := rlock.New(c, "leader").Acquire(ctx)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Println("stopped while waiting")
			return nil
		}
		return err
	}
	fmt.Printf("leader %d\n", l.Token())
	select {
	case <-l.Lost():
		// Someone else may lead now: stop leading at once.
		fmt.Printf("lost: %v\n", l.Err())
		return l.Err()
	case <-ctx.Done():
		err := l.Release(context.Background())
		fmt.Printf("stepped down: released (%v)\n", errOrOK(err))
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
	lines := make(chan line)
	procs := make(map[int]*exec.Cmd)
	defer func() { // on failure, leave no candidate behind
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
		leader int    // the candidate leading now, 0 for none
		token  uint64 // its fencing token
		failed []string
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
		t, ok := strings.CutPrefix(l.text, "leader ")
		if !ok {
			return 0
		}
		tok, _ := strconv.ParseUint(t, 10, 64)
		if leader != 0 {
			failed = append(failed, fmt.Sprintf("candidate %d led while candidate %d did", l.id, leader))
		}
		if tok <= token {
			failed = append(failed, fmt.Sprintf("token %d after token %d", tok, token))
		}
		leader, token = l.id, tok
		return l.id
	}
	// next relays lines until a candidate becomes leader.
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
			}
		}
	}
	alive := len(procs) // candidates the supervisor has not killed or stopped

	first, err := next(10 * time.Second)
	if err != nil {
		return err
	}
	time.Sleep(*lead)
	fmt.Printf("supervisor: kill -9 candidate %d; it cannot release, so its lease has to run out\n", first)
	acted := time.Now()
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
		time.Sleep(*lead)
		fmt.Printf("supervisor: SIGTERM to candidate %d; it releases the lock on the way out\n", leader)
		acted = time.Now()
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
			failed = append(failed, fmt.Sprintf("handover after a release took %v: as long as the lease", took))
		}
	}
	for deadline := time.After(10 * time.Second); len(procs) > 0; {
		select {
		case l := <-lines:
			relay(l)
		case <-deadline:
			return fmt.Errorf("%d candidates did not exit", len(procs))
		}
	}
	if len(failed) > 0 {
		return errors.New("FAILED: " + strings.Join(failed, "; "))
	}
	fmt.Println("ok: one leader at a time, handed over on a kill and on each release, tokens rising")
	return nil
}
