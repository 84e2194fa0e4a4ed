package partition

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/core"
	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/internal/retry"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

// callTimeout bounds one join or check: Redis that does not answer in
// that time is tried again.
const callTimeout = 5 * time.Second

// member is one Run: this Client's membership of the group and the
// workers of its partitions. Its loop, run, is the one goroutine that reads
// and writes its fields; the workers report back on exits.
//
// The membership and the assignment are in Redis (lua.Group); this member
// acts on its own row of the assignment, as partition_check reads it: it
// stops the workers of the partitions no longer its own and starts those of
// the new ones. It checks when the group tells of a change (a message on
// the group's channel), when the first of the other members' leases is due
// to end (so that a dead member's partitions move as its lease ends; alone,
// once a lease), and after a failed check or join, with backoff.
type member struct {
	g   *Group
	fn  func(context.Context, int) error
	ctx context.Context // Run's, ended too by Run's first error
	end context.CancelCauseFunc
	err error // Run's first error

	ls    *lease.Lease // the membership; nil while not a member
	gen   uint64       // the generation last acted on
	want  []bool       // this member's partitions; nil for none
	idle  []bool       // fn returned nil: not run again until the partition moves
	work  []*worker    // each partition's worker, nil for none
	live  int          // workers not yet exited
	exits chan exit    // a slot per partition: a worker never blocks on it
	timer *time.Timer
	b     *backoff.ExponentialBackOff // between failed joins and checks
}

// worker runs one partition's fn (see member.part).
type worker struct {
	stop     context.CancelCauseFunc
	stopping bool // stop was called: the partition is no longer this member's
}

// exit is a worker's end.
type exit struct {
	part int
	idle bool  // fn returned nil while the partition was this member's
	err  error // ends Run
}

func newMember(ctx context.Context, g *Group, fn func(context.Context, int) error) *member {
	ctx, end := context.WithCancelCause(ctx)
	m := &member{g: g, fn: fn, ctx: ctx, end: end,
		idle: make([]bool, g.n), work: make([]*worker, g.n), exits: make(chan exit, g.n),
		timer: time.NewTimer(time.Hour), b: retry.Backoff(20*time.Millisecond, time.Second)}
	m.timer.Stop()
	return m
}

// run is Run's loop, until its ctx ends or it fails; then it leaves the
// group and waits for every worker.
func (m *member) run() error {
	defer m.end(nil)
	w, err := m.g.c.Hub().Watch(m.g.p.Channel(), "")
	if err != nil {
		// The hub is closed: the Client is.
		return core.Errorf(opRun, m.g.name, "%w", lease.ErrClosed)
	}
	defer w.Leave(false)
	// A message is heard only once the channel is subscribed: checked
	// again then, as after any message.
	ready := w.Ready()
	m.join()
	for m.ctx.Err() == nil {
		var lost <-chan struct{}
		if m.ls != nil {
			lost = m.ls.Lost()
		}
		select {
		case <-m.ctx.Done():
		case <-ready:
			ready = nil
			m.refresh()
		case <-w.C():
			m.refresh()
		case <-m.timer.C:
			m.refresh()
		case <-lost:
			m.dropped(m.ls.Err())
		case e := <-m.exits:
			m.exited(e)
		}
	}
	m.shutdown()
	return m.err
}

// refresh joins while not a member, else checks.
func (m *member) refresh() {
	if m.ls == nil {
		m.join()
		return
	}
	m.check()
}

// join makes this Client a member: a fresh owner, the assignment made anew
// with it, then checked.
func (m *member) join() {
	ctx, cancel := context.WithTimeout(m.ctx, callTimeout)
	ls, err := m.g.base.TryAcquire(ctx)
	cancel()
	switch {
	case err == nil:
		m.ls = ls
		m.check()
	case m.ctx.Err() != nil:
	case errors.Is(err, lease.ErrNotReplicated):
		// A replica away, or not back yet after a failover: a pause,
		// waited out as Redis not answering is.
		m.later()
	case errors.Is(err, lease.ErrNotAcquired):
		m.fail(core.Errorf(opRun, m.g.name, "%w: the group's members have a number of partitions other than %d "+
			"(every member of a group must give the same n)", lease.ErrInvalid, m.g.n))
	case transient(err):
		m.later()
	default:
		m.fail(err)
	}
}

// check reads this member's view of the group and acts on it.
func (m *member) check() {
	if err := m.g.c.Err(); err != nil {
		m.fail(core.Errorf(opRun, m.g.name, "%w", err))
		return
	}
	ctx, cancel := context.WithTimeout(m.ctx, callTimeout)
	v, err := m.g.p.Check(ctx, m.g.c.Redis(), m.ls.Owner())
	cancel()
	switch {
	case m.ctx.Err() != nil:
	case err != nil && transient(err):
		m.later()
	case err != nil:
		m.fail(core.RedisErr(opRun, m.g.name, err))
	case !v.Member:
		// Dropped: its lease ended in Redis before the keeper knew (a
		// pause longer than the lease). Its partitions may be others' now.
		// It joins afresh at the next refresh, after a backoff: a lease
		// too short for Redis' answers to come in time is not retried in
		// a loop.
		_ = m.ls.Release(m.ctx) // gives it up here too
		m.ls = nil
		m.assign(nil, fmt.Errorf("%w: this member was dropped from the group", ErrRevoked))
		m.later()
	default:
		m.b.Reset()
		m.apply(v)
	}
}

// apply acts on v: the partitions that are this member's now, and the next
// check when the first of the others' leases ends.
func (m *member) apply(v lua.View) {
	want := make([]bool, m.g.n)
	for _, p := range v.Parts {
		if p >= 0 && p < m.g.n {
			want[p] = true
		}
	}
	m.g.mu.Lock()
	if v.Generation != m.gen {
		m.g.stats.Rebalances++
	}
	m.g.stats.Members, m.g.stats.Generation, m.g.stats.Assigned = v.Members, v.Generation, len(v.Parts)
	m.g.mu.Unlock()
	m.gen = v.Generation
	m.assign(want, fmt.Errorf("%w: the partition moved to another member", ErrRevoked))
	// At the first of the others' leases' end, measured at the server
	// before the reply travelled: the timer fires no earlier. A lone
	// member checks once a lease, in case it missed a joiner's message
	// (an ACL that refuses SUBSCRIBE): the joiner waits for its partitions.
	next := m.g.ttl
	if v.Next >= 0 {
		next = v.Next + time.Millisecond
	}
	m.timer.Reset(next)
}

// later checks (or joins) again after a failure, with backoff.
func (m *member) later() { m.timer.Reset(m.b.NextBackOff()) }

// dropped handles the loss of the membership (cause): every partition is
// stopped, since others may own them now, and the member joins afresh;
// the Client's Close ends Run.
func (m *member) dropped(cause error) {
	m.ls = nil
	if errors.Is(cause, lease.ErrClosed) {
		m.fail(cause)
		return
	}
	m.assign(nil, fmt.Errorf("%w: the membership was lost: %w", ErrRevoked, cause))
	m.g.mu.Lock()
	m.g.stats.Members, m.g.stats.Assigned = 0, 0
	m.g.mu.Unlock()
	m.join()
}

// assign makes want this member's partitions (nil: none), stopping the
// workers of the others with cause.
func (m *member) assign(want []bool, cause error) {
	m.want = want
	for p := range m.g.n {
		m.settle(p, cause)
	}
}

// settle starts or stops partition p's worker as the assignment says.
func (m *member) settle(p int, cause error) {
	w := m.work[p]
	switch {
	case m.want == nil || !m.want[p]:
		m.idle[p] = false
		if w != nil && !w.stopping {
			w.stopping = true
			w.stop(cause)
		}
	case w == nil && !m.idle[p]:
		m.start(p)
	}
}

// start runs partition p's worker.
func (m *member) start(p int) {
	ctx, stop := context.WithCancelCause(m.ctx)
	m.work[p] = &worker{stop: stop}
	m.live++
	go func() { m.exits <- m.part(ctx, p) }()
}

// exited handles the end of a worker.
func (m *member) exited(e exit) {
	w := m.work[e.part]
	m.work[e.part] = nil
	m.live--
	w.stop(nil)
	switch {
	case e.err != nil:
		m.fail(e.err)
		return
	case e.idle && !w.stopping:
		m.idle[e.part] = true
	}
	// Revoked and assigned again meanwhile, or lost: started anew.
	m.settle(e.part, nil)
}

// fail ends Run with err, the first failure.
func (m *member) fail(err error) {
	if m.err == nil {
		m.err = err
		m.end(err)
	}
}

// shutdown leaves the group while the fns, whose ctx has ended, return,
// then waits for every worker: the partitions' new owners are told at once
// and wait only for the fns to return and the partitions to be released.
func (m *member) shutdown() {
	m.timer.Stop()
	if m.ls != nil {
		// Bounded by the membership's lease and core.ReleaseTimeout, even
		// with Redis unreachable.
		_ = m.ls.Release(context.Background())
		m.ls = nil
	}
	for m.live > 0 {
		e := <-m.exits
		m.work[e.part].stop(nil)
		m.work[e.part] = nil
		m.live--
	}
	m.g.mu.Lock()
	m.g.stats.Members, m.g.stats.Assigned = 0, 0
	m.g.mu.Unlock()
}

// part is the worker of partition p, in a goroutine of its own: it takes
// the partition's lock (waiting for the last owner's release or the end of
// its lease), runs fn under its lease and releases it when fn returns
// (lease.Do), until ctx ends or fn returns; a lease lost under fn is taken
// again, with backoff, while ctx lasts.
func (m *member) part(ctx context.Context, p int) exit {
	l := rlock.New(m.g.lc, m.g.partName(p))
	run := func(ctx context.Context) error {
		m.g.own(p, true)
		defer m.g.own(p, false)
		return m.fn(ctx, p)
	}
	b := retry.Backoff(20*time.Millisecond, time.Second)
	for {
		err := lease.Do(ctx, l, run)
		switch {
		case ctx.Err() != nil:
			return exit{part: p} // revoked, or Run ends: whatever fn said
		case err == nil:
			return exit{part: p, idle: true}
		case errors.Is(err, lease.ErrClosed), !errors.Is(err, lease.ErrLost):
			return exit{part: p, err: err}
		}
		select {
		case <-ctx.Done():
			return exit{part: p}
		case <-time.After(b.NextBackOff()):
		}
	}
}

// transient reports whether err, a join's or a check's, may pass: a pause
// or no reply. An acquisition that makes one attempt calls a Redis error
// reply final even when it is a pause (LOADING, BUSY): the reply it wraps
// decides.
func transient(err error) bool {
	if errors.Is(err, lease.ErrRedis) {
		var re *rueidis.RedisError
		return errors.As(err, &re) && retry.Transient(re)
	}
	return retry.Transient(err)
}
