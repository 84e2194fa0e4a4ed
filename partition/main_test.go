package partition_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/internal/harness/testmain"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/partition"
)

// helperEnv, when set to a Redis address, turns the test binary into a
// member process for TestKilledMemberTakenOver: it runs a member of the
// group named by helperEnv_GROUP, prints "PART TOKEN" for each partition it
// starts, and waits until it is killed.
const helperEnv = "PARTITION_HELPER_REDIS"

// TestMain runs the tests, and the examples against a redis-server of
// their own, and checks for leaked goroutines. One goroutine of rueidis',
// not ours, may outlive a test by a few seconds and end on its own: a
// cluster client that refreshed its slot map closes the connections it
// dropped 5s later (TestCluster).
func TestMain(m *testing.M) {
	if addr := os.Getenv(helperEnv); addr != "" {
		os.Exit(helperMember(addr))
	}
	testmain.Run(m, []*string{&redisAddr}, goleak.IgnoreCurrent(),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"))
}

// Shared test helpers (internal/harness/locktest).
var (
	eventually = locktest.Eventually
	ctxTimeout = locktest.Ctx
	wantErr    = locktest.WantErr
)

// watchdog is the tests' lease: a dead member is gone this long after its
// last renewal.
const watchdog = 500 * time.Millisecond

// calm is the lease of the tests in which no lease is meant to run out:
// long enough that a loaded machine's late renewal drops no member.
const calm = 3 * time.Second

// open returns a Client on srv with the tests' short watchdog, closed when
// the test ends.
func open(t *testing.T, srv *redistest.Server, opts ...leasehold.Option) *leasehold.Client {
	t.Helper()
	return locktest.Open(t, srv, append([]leasehold.Option{leasehold.WithWatchdog(watchdog)}, opts...)...)
}

// openAt returns a Client dialled with opt, with the tests' short
// watchdog unless opts say otherwise, closed when the test ends.
func openAt(t *testing.T, opt rueidis.ClientOption, opts ...leasehold.Option) *leasehold.Client {
	t.Helper()
	return locktest.OpenAt(t, opt, append([]leasehold.Option{leasehold.WithWatchdog(watchdog)}, opts...)...)
}

// recorder is the outside view of a group's fns: which member runs each
// partition, under which token. It fails the test on two fns of one
// partition at once, and on a token that does not rise.
type recorder struct {
	t      *testing.T
	mu     sync.Mutex
	active map[int]string // partition -> member running its fn
	last   map[int]uint64 // partition -> token of its last fn
	starts map[int]int    // partition -> fns started
	bad    []string
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{t: t, active: map[int]string{}, last: map[int]uint64{}, starts: map[int]int{}}
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, b := range r.bad {
			t.Error(b)
		}
	})
	return r
}

// enter records member starting partition p's fn under ctx's lease.
func (r *recorder) enter(ctx context.Context, member string, p int) {
	ls := lease.FromContext(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case ls == nil:
		r.bad = append(r.bad, fmt.Sprintf("%s: partition %d: no lease in fn's ctx", member, p))
		return
	case ls.Name() != "g:"+strconv.Itoa(p) && !strings.HasSuffix(ls.Name(), ":"+strconv.Itoa(p)):
		r.bad = append(r.bad, fmt.Sprintf("%s: partition %d runs under the lease of %s", member, p, ls.Name()))
	}
	if o, ok := r.active[p]; ok {
		r.bad = append(r.bad, fmt.Sprintf("partition %d: %s started it while %s ran it", p, member, o))
	}
	if tok := ls.Token(); tok <= r.last[p] {
		r.bad = append(r.bad, fmt.Sprintf("partition %d: %s's token %d after %d: not rising", p, member, tok, r.last[p]))
	}
	r.active[p], r.last[p] = member, ls.Token()
	r.starts[p]++
}

// leave records member's fn of p returning.
func (r *recorder) leave(member string, p int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active[p] == member {
		delete(r.active, p)
	}
}

// owners is how many partitions each member runs now.
func (r *recorder) owners() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[string]int{}
	for _, o := range r.active {
		m[o]++
	}
	return m
}

// started is how many fns have started, in all.
func (r *recorder) started() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, k := range r.starts {
		n += k
	}
	return n
}

// startsOf is how many fns of each partition have started.
func (r *recorder) startsOf() map[int]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[int]int{}
	for p, k := range r.starts {
		m[p] = k
	}
	return m
}

// runner is one member's Run in a goroutine.
type runner struct {
	name   string
	g      *partition.Group
	cancel context.CancelFunc
	done   chan error
}

// run runs a member of the group "g" of n partitions on c, whose fns are
// recorded by r and hold their partition until their ctx ends; it is
// stopped when the test ends.
func run(t *testing.T, r *recorder, name string, c *leasehold.Client, n int, opts ...partition.Option) *runner {
	t.Helper()
	return runFn(t, name, c, n, func(ctx context.Context, p int) error {
		r.enter(ctx, name, p)
		defer r.leave(name, p)
		<-ctx.Done()
		return context.Cause(ctx)
	}, opts...)
}

// runFn runs a member of "g" with fn.
func runFn(t *testing.T, name string, c *leasehold.Client, n int, fn func(context.Context, int) error, opts ...partition.Option) *runner {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	rn := &runner{name: name, g: partition.New(c, "g", n, opts...), cancel: cancel, done: make(chan error, 1)}
	go func() { rn.done <- rn.g.Run(ctx, fn) }()
	t.Cleanup(func() { rn.stop(t) })
	return rn
}

// stop ends the member's Run and returns its error; it fails t if Run
// does not return within 10s.
func (rn *runner) stop(t *testing.T) error {
	t.Helper()
	rn.cancel()
	return rn.wait(t, 10*time.Second)
}

// wait returns the member's Run's error, failing t after d. A Run waited
// for once returns nil after.
func (rn *runner) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case err, ok := <-rn.done:
		if ok {
			close(rn.done)
		}
		return err
	case <-time.After(d):
		t.Fatalf("%s: Run did not return within %v", rn.name, d)
		return nil
	}
}

// settled waits until the members own n partitions between them, each
// floor or ceil of n over the members, each member's Owned saying so and
// every member seeing them all.
func settled(t *testing.T, d time.Duration, r *recorder, n int, rs ...*runner) {
	t.Helper()
	lo, hi := n/len(rs), (n+len(rs)-1)/len(rs)
	var last string
	cond := func() bool {
		owners := r.owners()
		total := 0
		var b strings.Builder
		ok := true
		for _, rn := range rs {
			k, s := owners[rn.name], rn.g.Stats()
			total += k
			fmt.Fprintf(&b, "%s: runs %d, owned %d, stats %+v; ", rn.name, k, len(rn.g.Owned()), s)
			if k < lo || k > hi || len(rn.g.Owned()) != k || s.Assigned != k || s.Members != len(rs) {
				ok = false
			}
		}
		last = b.String()
		return ok && total == n
	}
	if !pollFor(d, cond) {
		t.Fatalf("not settled within %v (%d partitions, %d members, %d to %d each): %s", d, n, len(rs), lo, hi, last)
	}
}

// pollFor polls cond until it holds, for at most d.
func pollFor(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// helperMember is the member process of TestKilledMemberTakenOver.
func helperMember(addr string) int {
	wd, err := time.ParseDuration(os.Getenv(helperEnv + "_WATCHDOG"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	n, _ := strconv.Atoi(os.Getenv(helperEnv + "_N"))
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{addr}}, leasehold.WithWatchdog(wd))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	err = partition.New(c, os.Getenv(helperEnv+"_GROUP"), n).Run(context.Background(), func(ctx context.Context, p int) error {
		mu.Lock()
		fmt.Fprintf(out, "%d %d\n", p, lease.FromContext(ctx).Token())
		out.Flush()
		mu.Unlock()
		<-ctx.Done()
		return nil
	})
	fmt.Fprintln(os.Stderr, "helper member returned", err) // it should be killed first
	return 1
}

// isInvalid fails t unless err is a *lease.Error of Run wrapping
// lease.ErrInvalid.
func isInvalid(t *testing.T, err error) {
	t.Helper()
	var le *lease.Error
	if !errors.As(err, &le) || le.Op != "run" || !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("error %v: want a *lease.Error of op run wrapping lease.ErrInvalid", err)
	}
}
