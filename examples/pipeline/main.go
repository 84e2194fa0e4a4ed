// Command pipeline splits the partitions of a stream among the replicas of
// a service with package partition, and fences every partition's commits
// with the token of its lease.
//
// Each member (a replica, with a Client of its own: here all in one
// process, each member's Run in an errgroup) runs fn for the partitions the
// group gives it. fn resumes from the partition's committed offset,
// processes a batch of events every -batch and commits the batch's offset
// through the Client's fence (c.Fence()) with the token of the partition's
// lease (lease.FromContext(ctx).Token()). A commit is retried until Redis
// answers, whatever fn's ctx says: a dropped commit would lose a batch.
// That is why it is fenced: a commit that reaches Redis after the
// partition moved on is refused, not applied over the new owner's.
//
// The run: three members split 8 partitions, 3, 3 and 2. The supervisor
// cuts member 2 off from Redis (its connections closed and refused, as a
// crash or a network partition leaves them: no goodbye), its commits stuck
// retrying. The others take its partitions over once its lease (-ttl) has
// run out, each resuming from the committed offset under a higher token.
// The supervisor then stops member 2 and heals the network: member 2's
// retried commits reach Redis and are refused (fence.ErrStale), since the
// new owners have committed. Member 4 joins, and the group moves only the
// partitions that must move to balance them again.
//
// It exits non-zero if a partition ran under two live leases at once, if
// an offset went back, if a stale commit landed or one of member 2's was
// not refused, if a takeover or a rebalance took too long, left the
// partitions unbalanced or moved more than it must.
//
// It uses the Redis at $REDIS_ADDR, or starts a redis-server of its own on a
// free loopback port and stops it on the way out.
//
//	go run ./examples/pipeline
//	go run ./examples/pipeline -partitions 32 -ttl 3s
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"golang.org/x/sync/errgroup"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/fence"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/partition"
)

var (
	parts = flag.Int("partitions", 8, "partitions of the stream")
	ttl   = flag.Duration("ttl", time.Second, "the watchdog lease: how long a member cut off keeps its partitions")
	batch = flag.Duration("batch", 50*time.Millisecond, "how often a partition's fn processes and commits a batch")
)

// batchSize is the events of a batch: a commit raises the offset by it.
const batchSize = 10

func main() {
	log.SetFlags(0)
	flag.Parse()
	if err := withRedis(run); err != nil {
		log.Fatal(err)
	}
}

func run(addr string) error {
	if *parts < 4 || *ttl <= 0 || *batch <= 0 || *batch >= *ttl/2 {
		return fmt.Errorf("-partitions must be 4 or more, -ttl positive, -batch below half of -ttl")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // bounds the whole run
	defer cancel()
	// Each run its own keys, so that runs against one Redis (REDIS_ADDR) do
	// not meet.
	p := &pipeline{group: "pipeline:" + strconv.FormatInt(time.Now().UnixNano(), 36), addr: addr,
		commits: make([]commit, *parts), running: make([]*running, *parts)}
	g, gctx := errgroup.WithContext(ctx)
	defer func() {
		for _, m := range p.members {
			m.stop()
		}
		_ = g.Wait()
		for _, m := range p.members {
			m.close()
		}
	}()
	for range 3 {
		if err := p.join(gctx, g); err != nil {
			return err
		}
	}
	if err := p.balanced(gctx, 10*time.Second, p.members...); err != nil {
		return err
	}
	fmt.Printf("3 members split %d partitions: %s\n", *parts, p.owners(p.members...))
	p.verbose.Store(true)  // from now on, every fn's start is printed
	time.Sleep(5 * *batch) // a few commits

	// Member 2 is cut off: its leases run out in Redis, and the others'
	// checks, timed to the end of its membership's lease, take its
	// partitions over.
	victim, live := p.members[1], []*member{p.members[0], p.members[2]}
	var held []int
	for part, n := range p.assignment() {
		if n == victim.n {
			held = append(held, part)
		}
	}
	tokens := p.tokens(held)
	cut := time.Now()
	victim.link.cut()
	fmt.Printf("supervisor: cut member 2 off from Redis (no goodbye) while it runs %v\n", held)
	if err := p.balanced(gctx, *ttl+10*time.Second, live...); err != nil {
		return err
	}
	took := time.Since(cut)
	fmt.Printf("supervisor: member 2's partitions taken over %v after the cut (lease %v): %s\n",
		took.Round(10*time.Millisecond), *ttl, p.owners(live...))
	if took > *ttl+5*time.Second { // a second beyond the lease, and room for a loaded machine
		return fmt.Errorf("FAILED: the takeover took %v, over the lease and 5s", took)
	}
	// Once each of its partitions' new owners has committed, member 2's
	// retried commits are stale.
	if err := p.waitFor(gctx, 10*time.Second, "new owners' commits", func() bool { return p.committedAbove(tokens) }); err != nil {
		return err
	}
	victim.stop()
	victim.link.heal()
	fmt.Println("supervisor: stopped member 2 and healed the network: its commits, retried all along, reach Redis")
	if err := victim.wait(10 * time.Second); err != nil {
		return err
	}
	if got := p.refusals(); got != len(held) {
		return fmt.Errorf("FAILED: %d of member 2's %d stuck commits refused", got, len(held))
	}

	// Member 4 joins: the group moves only what it must.
	before := p.assignment()
	start := time.Now()
	if err := p.join(gctx, g); err != nil {
		return err
	}
	live = append(live, p.members[3])
	if err := p.balanced(gctx, 10*time.Second, live...); err != nil {
		return err
	}
	moved := 0
	for part, m := range p.assignment() {
		if before[part] != m {
			moved++
		}
	}
	fmt.Printf("supervisor: member 4 joined: %s after %v; %d partitions moved\n",
		p.owners(live...), time.Since(start).Round(time.Millisecond), moved)
	if want := *parts / 3; moved != want {
		return fmt.Errorf("FAILED: %d partitions moved to the joiner, want %d", moved, want)
	}
	time.Sleep(5 * *batch) // a few commits more

	for _, m := range p.members {
		m.stop()
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := p.check(ctx); err != nil {
		return err
	}
	fmt.Printf("ok: no partition ran under two live leases, %d stale commits refused, every offset rose and is its last owner's\n", p.refusals())
	return nil
}

// pipeline is the run: its members and what their fns did.
type pipeline struct {
	group   string
	addr    string
	members []*member
	verbose atomic.Bool

	mu       sync.Mutex
	commits  []commit   // by partition: the last commit applied
	running  []*running // by partition: its fn now, nil for none
	refused  int
	failures []string
}

// commit is a commit applied.
type commit struct {
	offset int64
	token  uint64
}

// running is a partition's fn running: its member and its lease's ctx.
type running struct {
	member int
	ctx    context.Context
}

// member is one replica: its Client, its network to Redis (link) and its
// member of the group.
type member struct {
	n      int
	p      *pipeline
	rc     rueidis.Client
	c      *leasehold.Client
	link   *link
	g      *partition.Group
	cancel context.CancelFunc
	done   chan error
}

// join starts member len(p.members)+1: its Client, its Run in g.
func (p *pipeline) join(ctx context.Context, g *errgroup.Group) error {
	m := &member{n: len(p.members) + 1, p: p, link: &link{}, done: make(chan error, 1)}
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{p.addr}, DialCtxFn: m.link.dial})
	if err != nil {
		return err
	}
	// The member's own rueidis client, for its reads, and wrapped by
	// leasehold.New for its group, its partitions' locks and its fence.
	c, err := leasehold.New(rc, leasehold.WithWatchdog(*ttl))
	if err != nil {
		rc.Close()
		return err
	}
	m.rc, m.c, m.g = rc, c, partition.New(c, p.group, *parts)
	ctx, m.cancel = context.WithCancel(ctx)
	p.members = append(p.members, m)
	g.Go(func() error {
		err := m.g.Run(ctx, m.part)
		m.done <- err
		return err
	})
	return nil
}

// part is fn: partition part's consumer on member m.
func (m *member) part(ctx context.Context, part int) error {
	token := lease.FromContext(ctx).Token()
	key := fmt.Sprintf("%s:offset:%d", m.p.group, part)
	offset, err := m.rc.Do(ctx, m.rc.B().Get().Key(key).Build()).AsInt64()
	if err != nil && !rueidis.IsRedisNil(err) {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	m.p.enter(ctx, m.n, part, offset, token)
	defer m.p.leave(ctx, part)
	tick := time.NewTicker(*batch)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		offset += batchSize // the batch's events, processed
		err := m.commit(key, offset, token)
		switch {
		case errors.Is(err, fence.ErrStale):
			m.p.refuse(m.n, part, offset, token, err)
			return nil
		case err != nil:
			return err
		}
		m.p.committed(m.n, part, offset, token)
	}
}

// commit sets the partition's offset, fenced by token: refused
// (fence.ErrStale) once an owner with a higher token has committed. It is
// retried until Redis answers, with no regard for fn's ctx.
func (m *member) commit(key string, offset int64, token uint64) error {
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(*batch) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := m.c.Fence().Set(ctx, key, strconv.FormatInt(offset, 10), token)
		cancel()
		switch {
		case err == nil, errors.Is(err, fence.ErrStale), errors.Is(err, lease.ErrClosed):
			return err
		case time.Now().After(deadline):
			return fmt.Errorf("member %d: commit to %s: no answer for 30s: %w", m.n, key, err)
		}
	}
}

// stop ends the member's Run; wait waits for it, at most d.
func (m *member) stop() { m.cancel() }

func (m *member) wait(d time.Duration) error {
	select {
	case err := <-m.done:
		m.done <- err // for the errgroup's Wait, which has it already, and a later wait
		return err
	case <-time.After(d):
		return fmt.Errorf("FAILED: member %d's Run did not return within %v", m.n, d)
	}
}

// close closes the member's Client, then its rueidis client.
func (m *member) close() {
	m.c.Close()
	m.rc.Close()
}

// enter records member n starting partition part's fn under ctx's lease.
func (p *pipeline) enter(ctx context.Context, n, part int, offset int64, token uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r := p.running[part]; r != nil && r.ctx.Err() == nil {
		p.failures = append(p.failures, fmt.Sprintf("partition %d: member %d started it while member %d's lease on it lived", part, n, r.member))
	}
	p.running[part] = &running{member: n, ctx: ctx}
	if p.verbose.Load() {
		fmt.Printf("member %d: runs partition %d from offset %d, token %d\n", n, part, offset, token)
	}
}

// leave records partition part's fn returning.
func (p *pipeline) leave(ctx context.Context, part int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r := p.running[part]; r != nil && r.ctx == ctx {
		p.running[part] = nil
	}
}

// committed records a commit applied: its offset and token must not be
// below the last one's.
func (p *pipeline) committed(n, part int, offset int64, token uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	last := p.commits[part]
	if offset <= last.offset || token < last.token {
		p.failures = append(p.failures, fmt.Sprintf("partition %d: member %d committed offset %d under token %d after offset %d under %d",
			part, n, offset, token, last.offset, last.token))
	}
	p.commits[part] = commit{offset, token}
}

// refuse records a commit refused as stale.
func (p *pipeline) refuse(n, part int, offset int64, token uint64, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refused++
	fmt.Printf("member %d: partition %d: commit of offset %d under token %d refused: %v\n", n, part, offset, token, err)
}

func (p *pipeline) refusals() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

// tokens are the tokens of the last commits of parts.
func (p *pipeline) tokens(parts []int) map[int]uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := map[int]uint64{}
	for _, part := range parts {
		t[part] = p.commits[part].token
	}
	return t
}

// committedAbove reports whether each partition of tokens has a commit
// applied under a higher token.
func (p *pipeline) committedAbove(tokens map[int]uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for part, t := range tokens {
		if p.commits[part].token <= t {
			return false
		}
	}
	return true
}

// balanced waits, at most d, until the fns of ms run every partition
// between them, each member its floor or ceil share.
func (p *pipeline) balanced(ctx context.Context, d time.Duration, ms ...*member) error {
	lo, hi := *parts/len(ms), (*parts+len(ms)-1)/len(ms)
	return p.waitFor(ctx, d, fmt.Sprintf("balance over %d members", len(ms)), func() bool {
		a, total := p.assignment(), 0
		for _, m := range ms {
			k := 0
			for _, n := range a {
				if n == m.n {
					k++
				}
			}
			// The group's view (Owned) and the fns' agree.
			if k < lo || k > hi || len(m.g.Owned()) != k {
				return false
			}
			total += k
		}
		return total == *parts
	})
}

// waitFor polls cond until it holds, for at most d.
func (p *pipeline) waitFor(ctx context.Context, d time.Duration, what string, cond func() bool) error {
	for deadline := time.Now().Add(d); !cond(); time.Sleep(5 * time.Millisecond) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("FAILED: no %s within %v: %s", what, d, p.owners(p.members...))
		}
	}
	return nil
}

// owners says which partitions each of ms runs.
func (p *pipeline) owners(ms ...*member) string {
	a := p.assignment()
	var s []string
	for _, m := range ms {
		var runs []int
		for part, n := range a {
			if n == m.n {
				runs = append(runs, part)
			}
		}
		s = append(s, fmt.Sprintf("member %d runs %v", m.n, runs))
	}
	return strings.Join(s, ", ")
}

// assignment is the member whose fn runs each partition, as the fns
// recorded it (enter, leave), 0 for none.
func (p *pipeline) assignment() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	a := make([]int, *parts)
	for part, r := range p.running {
		if r != nil {
			a[part] = r.member
		}
	}
	return a
}

// check fails on what enter and committed found, and on an offset in Redis
// other than the last commit applied.
func (p *pipeline) check(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.failures) > 0 {
		return errors.New("FAILED: " + strings.Join(p.failures, "; "))
	}
	rc := p.members[0].rc
	for part, last := range p.commits {
		key := fmt.Sprintf("%s:offset:%d", p.group, part)
		got, err := rc.Do(ctx, rc.B().Get().Key(key).Build()).AsInt64()
		if err != nil {
			return err
		}
		if got != last.offset {
			return fmt.Errorf("FAILED: partition %d's offset is %d in Redis; the last commit applied set %d", part, got, last.offset)
		}
	}
	if !slices.ContainsFunc(p.commits, func(c commit) bool { return c.offset > 0 }) {
		return errors.New("FAILED: nothing committed")
	}
	return nil
}

// link is a member's network to Redis: cut closes its connections and
// refuses new ones, as a crash or a network partition leaves them; heal
// lets it dial again.
type link struct {
	mu    sync.Mutex
	down  bool
	conns []net.Conn
}

func (l *link) dial(ctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.down {
		return nil, fmt.Errorf("dial %s: cut off", addr)
	}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		l.conns = append(l.conns, conn)
	}
	return conn, err
}

func (l *link) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = true
	for _, c := range l.conns {
		c.Close()
	}
	l.conns = nil
}

func (l *link) heal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = false
}
