package chaos

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/election"
	"github.com/leasehold/leasehold/fairqueue"
	"github.com/leasehold/leasehold/internal/core"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/quorum"
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/rw"
	"github.com/leasehold/leasehold/semaphore"
)

// WorkerEnv, when set to a JSON WorkerConfig, turns the test binary into a
// worker process (see TestMain).
const WorkerEnv = "LEASEHOLD_CHAOS_WORKER"

// The kinds of lock a worker takes.
const (
	KindRLock   = "rlock"   // rlock.New
	KindFair    = "fair"    // fairqueue.New
	KindRW      = "rw"      // rw.New(...).Write()
	KindRedLock = "redlock" // quorum.RedLock of an rlock on each address
	// KindSemaphore is one permit of semaphore.New: as many goroutines
	// hold at once as the test sets permits, each with token 0.
	KindSemaphore = "semaphore"
	// KindElection is election.New's leadership: each goroutine campaigns
	// with its holder name as the value, and its term is its fencing token,
	// so the checker's rules say that two leaders never act in one term.
	KindElection = "election"
	// KindPartition is a member of the partition group Name of Partitions
	// partitions (partition.New), one per process: each fn it runs is a
	// section of its partition, which reads and writes the partition's
	// own fenced resource (on its lock's name, NAME:P) under the
	// partition's lease, again and again until its ctx ends.
	KindPartition = "partition"
	// KindNone is no lock at all: Acquire returns at once with a fresh
	// token; KindNoneUnfenced the same with token 1 every time (no fencing).
	// Only the checker's own tests use them, to show that it catches what a
	// broken lock does.
	KindNone         = "none"
	KindNoneUnfenced = "none-unfenced"
)

// WorkerConfig is what a worker process does.
type WorkerConfig struct {
	// Process names the worker; its goroutines are Process/g0, Process/g1...
	Process string `json:"process"`
	// Kind is the lock (KindRLock, ...); Name its name.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Addrs are the lock's Redis servers: one, or one per RedLock node.
	Addrs []string `json:"addrs"`
	// Resource is the unix socket of the fenced resource's Redis server:
	// out of reach of the faults of the network, as the resource must be.
	Resource   string `json:"resource"`
	Goroutines int    `json:"goroutines"`
	// Partitions is, for KindPartition, the group's number of partitions.
	Partitions int `json:"partitions,omitempty"`
	// Static, for KindPartition, runs the fns of these partitions with no
	// group and under no lock, each with a fresh token (as KindNone's), as
	// a static split of the partitions among processes would: only the
	// checker's own tests use it, to show that it catches what such a
	// split does.
	Static []int `json:"static,omitempty"`
	// Observers, for KindElection, is how many goroutines of the process
	// Observe the election (each on its own channel), recording every
	// report, until the worker stops.
	Observers int `json:"observers,omitempty"`
	// Watchdog is the Clients' watchdog lease.
	Watchdog time.Duration `json:"watchdog"`
	// Hold is the longest a goroutine stays in its critical section (a
	// random time in [Hold/2, Hold]); Think the pause after each section.
	// A partition's fn holds between its read and its write, and thinks
	// after the write.
	Hold  time.Duration `json:"hold"`
	Think time.Duration `json:"think"`
	// Wait is the ctx deadline of each Acquire.
	Wait time.Duration `json:"wait"`
	// Try is how many of the goroutines (the last ones) call TryAcquire,
	// with the same ctx deadline, instead of Acquire.
	Try int `json:"try,omitempty"`
	// NodeTimeout is the RedLock's per-node timeout.
	NodeTimeout time.Duration `json:"node_timeout"`
	// LateWrite makes the exit write go out even after the lease was lost:
	// a holder caught between its check and its write (the fence's case).
	// A partition's fn makes its next access, whichever it is, without
	// looking at its ctx.
	LateWrite bool `json:"late_write"`
	// Out is the file the records are appended to, one JSON line each.
	Out string `json:"out"`
	// Max stops the worker after this long even if nobody tells it to.
	Max time.Duration `json:"max"`
	// Sentinel, if set, is the master set that the Sentinels at Addrs
	// watch: the worker has one Client, reaching the primary through them.
	Sentinel string `json:"sentinel,omitempty"`
	// Replicas and ReplicaTimeout, if Replicas > 0, are the Clients'
	// WithReplicas.
	Replicas       int           `json:"replicas,omitempty"`
	ReplicaTimeout time.Duration `json:"replica_timeout,omitempty"`
}

// RunWorker runs a worker until its standard input is closed (or Max
// passes): each goroutine loops acquire, write "enter" to the resource, hold,
// write "exit", release, and records every acquisition and every wait; each
// observer records every report of Observe. It returns once its Clients are
// closed and its last record written.
func RunWorker(cfg WorkerConfig) error {
	if cfg.Observers > 0 && cfg.Kind != KindElection {
		return fmt.Errorf("observers of a %s: only an election has them", cfg.Kind)
	}
	if (cfg.Kind == KindPartition) != (cfg.Partitions > 0) {
		return fmt.Errorf("%d partitions of a %s: a partition group, and only it, has them", cfg.Partitions, cfg.Kind)
	}
	// Whatever runs now is not ours to stop; whatever we start must end.
	before := goleak.IgnoreCurrent()
	out, err := os.OpenFile(cfg.Out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	w := &worker{cfg: cfg, out: out, stop: make(chan struct{})}

	// Ends the observers' Observe with stop.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	halt := func() { once.Do(func() { close(w.stop); cancel() }) }
	go watchStdin(halt)
	limit := time.AfterFunc(cfg.Max, halt)
	defer limit.Stop()

	res, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{cfg.Resource}, DisableCache: true, ForceSingleClient: true,
		DialCtxFn: func(ctx context.Context, path string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
			return d.DialContext(ctx, "unix", path)
		}})
	if err != nil {
		return fmt.Errorf("resource: %w", err)
	}
	defer res.Close()
	cs, err := cfg.open()
	if err != nil {
		return err
	}

	var early int32
	var runErr error
	if cfg.Kind == KindPartition {
		runErr = w.member(ctx, cs[0], res)
	} else {
		early = w.run(ctx, cs, res)
	}
	for _, c := range cs {
		c.Close()
	}
	res.Close()
	w.emit(Record{Summary: w.summary(before)})
	if early > 0 {
		return fmt.Errorf("%d Observe channels closed before the worker stopped", early)
	}
	return runErr
}

// worker is a worker process: its config, its output file, and the channel
// closed when it is told to stop.
type worker struct {
	cfg   WorkerConfig
	out   *os.File
	outMu sync.Mutex
	stop  chan struct{}
}

// emit appends r to the output file. One write per record, unbuffered: a
// worker killed with kill -9 loses at most the section it was in.
func (w *worker) emit(r Record) {
	b, _ := json.Marshal(r)
	w.outMu.Lock()
	_, _ = w.out.Write(append(b, '\n'))
	w.outMu.Unlock()
}

// open opens the worker's Clients, one per rueidis option; on failure it
// closes those it opened.
func (cfg WorkerConfig) open() ([]*leasehold.Client, error) {
	opts := []leasehold.Option{leasehold.WithWatchdog(cfg.Watchdog)}
	if cfg.Replicas > 0 {
		opts = append(opts, leasehold.WithReplicas(cfg.Replicas, cfg.ReplicaTimeout))
	}
	ros := cfg.clientOptions()
	cs := make([]*leasehold.Client, len(ros))
	for i, ro := range ros {
		var err error
		if cs[i], err = leasehold.Open(ro, opts...); err != nil {
			for _, c := range cs[:i] {
				c.Close()
			}
			return nil, fmt.Errorf("open %s: %w", ro.InitAddress, err)
		}
	}
	return cs, nil
}

// run runs the worker goroutines and observers until the worker stops, and
// returns how many observers' channels closed before it did.
func (w *worker) run(ctx context.Context, cs []*leasehold.Client, res rueidis.Client) int32 {
	cfg := w.cfg
	resource := NewResource(res, cfg.Name)
	var wg sync.WaitGroup
	for g := 0; g < cfg.Goroutines; g++ {
		wg.Go(func() {
			holder := cfg.Process + "/g" + strconv.Itoa(g)
			gr := &goroutine{cfg: cfg, holder: holder, locker: cfg.locker(cs, res, holder),
				resource: resource, emit: w.emit, stop: w.stop, try: g >= cfg.Goroutines-cfg.Try}
			gr.loop()
		})
	}
	var early atomic.Int32 // observers whose channel closed before the worker stopped
	for o := 0; o < cfg.Observers; o++ {
		wg.Go(func() {
			if !observe(ctx, election.New(cs[0], cfg.Name), cfg.Process+"/o"+strconv.Itoa(o), w.emit) {
				early.Add(1)
			}
		})
	}
	wg.Wait()
	return early.Load()
}

// summary is the worker's last record, once its Clients are closed: the
// goroutines started since before that are still running.
func (w *worker) summary(before goleak.Option) *Summary {
	sum := &Summary{Process: w.cfg.Process}
	// Every goroutine the Clients started must have ended with Close; only
	// the one reading stdin (left blocked if Max stopped us) may remain. A
	// cluster client that refreshed its slot map (after a failover) closes
	// the connections it dropped 5s later, Close or not: give it 7s.
	deadline := time.Now().Add(7 * time.Second)
	for {
		err := goleak.Find(goleak.IgnoreAnyFunction("github.com/leasehold/leasehold/internal/harness/chaos.watchStdin"), before)
		if err != nil && time.Now().Before(deadline) {
			continue
		}
		if err != nil {
			sum.Leaked, sum.LeakInfo = countGoroutines(err.Error()), err.Error()
		}
		return sum
	}
}

// observe records every report Observe sends on its channel until ctx ends.
// It reports false if the channel closed while ctx had not ended: Observe
// gave up, which it must not while the Client is open.
func observe(ctx context.Context, e *election.Election, name string, emit func(Record)) bool {
	for l := range e.Observe(ctx) {
		emit(Record{Observed: &Observed{Observer: name, At: Now(), Token: l.Token, Owner: l.Owner, Value: l.Value}})
	}
	return ctx.Err() != nil
}

// watchStdin calls halt when standard input ends: the test closed its end of
// the pipe, or died.
func watchStdin(halt func()) {
	_, _ = io.Copy(io.Discard, os.Stdin)
	halt()
}

// countGoroutines counts the goroutines a goleak error lists.
func countGoroutines(s string) int {
	n := 0
	for i := 0; i+10 <= len(s); i++ {
		if s[i:i+10] == "Goroutine " {
			n++
		}
	}
	return max(n, 1)
}

// clientOption is the rueidis option of a worker's Client: short timeouts,
// so that faults are noticed in good time, as redistest's.
func clientOption(addr string) rueidis.ClientOption {
	return rueidis.ClientOption{
		InitAddress:      []string{addr},
		ConnWriteTimeout: 2 * time.Second,
		Dialer:           net.Dialer{Timeout: time.Second},
	}
}

// clientOptions are the rueidis options of the worker's Clients: one per
// address, or with Sentinel one that reaches the primary through the
// Sentinels at Addrs.
func (cfg WorkerConfig) clientOptions() []rueidis.ClientOption {
	if cfg.Sentinel != "" {
		opt := clientOption(cfg.Addrs[0])
		opt.InitAddress = cfg.Addrs
		opt.Sentinel = rueidis.SentinelOption{MasterSet: cfg.Sentinel, Dialer: opt.Dialer}
		return []rueidis.ClientOption{opt}
	}
	opts := make([]rueidis.ClientOption, len(cfg.Addrs))
	for i, addr := range cfg.Addrs {
		opts[i] = clientOption(addr)
	}
	return opts
}

// acquirer is what a worker goroutine takes: a lock (a lease.Locker) or
// the leadership of an election.
type acquirer interface {
	Acquire(ctx context.Context) (*lease.Lease, error)
}

// campaign is an election's leadership as a worker goroutine takes it,
// campaigning with value.
type campaign struct {
	e     *election.Election
	value string
}

func (c campaign) Acquire(ctx context.Context) (*lease.Lease, error) {
	return c.e.Campaign(ctx, c.value)
}

// locker makes the lock of the goroutine holder.
func (cfg WorkerConfig) locker(cs []*leasehold.Client, res rueidis.Client, holder string) acquirer {
	switch cfg.Kind {
	case KindElection:
		// An Election per goroutine: each is a candidate of its own,
		// publishing its name.
		return campaign{e: election.New(cs[0], cfg.Name), value: holder}
	case KindFair:
		return fairqueue.New(cs[0], cfg.Name)
	case KindRW:
		return rw.New(cs[0], cfg.Name).Write()
	case KindRedLock:
		ms := make([]lease.Locker, len(cs))
		for i, c := range cs {
			ms[i] = rlock.New(c, cfg.Name)
		}
		return quorum.RedLockWith(quorum.Config{NodeTimeout: cfg.NodeTimeout}, ms...)
	case KindSemaphore:
		return semaphore.New(cs[0], cfg.Name)
	case KindNone, KindNoneUnfenced:
		return &noLock{rc: res, name: cfg.Name, unfenced: cfg.Kind == KindNoneUnfenced}
	}
	return rlock.New(cs[0], cfg.Name)
}

// goroutine is one worker goroutine.
type goroutine struct {
	cfg      WorkerConfig
	holder   string
	locker   acquirer
	resource *Resource
	emit     func(Record)
	stop     <-chan struct{}
	try      bool // TryAcquire, not Acquire
	sections int  // sections so far, to name them
}

// tryer is a lock's TryAcquire.
type tryer interface {
	TryAcquire(ctx context.Context) (*lease.Lease, error)
}

// acquire makes one Acquire, or one TryAcquire if the goroutine tries.
func (w *goroutine) acquire(ctx context.Context) (*lease.Lease, error) {
	if t, ok := w.locker.(tryer); ok && w.try {
		return t.TryAcquire(ctx)
	}
	return w.locker.Acquire(ctx)
}

func (w *goroutine) stopped() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

func (w *goroutine) loop() {
	for !w.stopped() {
		ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Wait)
		start := Now()
		ls, err := w.acquire(ctx)
		wait := &Wait{Holder: w.holder, Start: start, Deadline: start.Add(w.cfg.Wait), Returned: Now(), Acquired: err == nil, Try: w.try}
		cancel()
		if err != nil {
			wait.Err = err.Error()
			w.emit(Record{Wait: wait})
			if !errors.Is(err, context.DeadlineExceeded) {
				w.pause(w.cfg.Think + 10*time.Millisecond) // Redis is failing: do not spin
			}
			continue
		}
		w.emit(Record{Wait: wait})
		w.section(ls)
		w.pause(w.cfg.Think)
	}
}

func (w *goroutine) pause(d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-w.stop:
	}
}

// section runs one critical section under ls and records it.
func (w *goroutine) section(ls *lease.Lease) {
	w.sections++
	s := &Section{Holder: w.holder, ID: w.holder + "#" + strconv.Itoa(w.sections), Owner: ls.Owner(), Token: ls.Token(), Enter: Now(),
		Goroutines: locktest.Goroutines()}
	// The lease's context is cancelled first thing when it is lost (before
	// Lost closes), and on release: the time it ends, if lost, is when the
	// holder can first know.
	lctx := ls.Context()
	var lost Mono
	watched := make(chan struct{})
	stopWatch := context.AfterFunc(lctx, func() {
		defer close(watched)
		lost = Now()
	})
	read, ok := w.write(s, lctx, "enter", 0, false)
	hold := w.cfg.Hold/2 + rand.N(w.cfg.Hold/2+1)
	t := time.NewTimer(hold)
	var knew Mono // when this goroutine saw the context end, if it did here
	select {
	case <-t.C:
	case <-lctx.Done():
		knew = Now()
	case <-w.stop: // told to finish: cut the section short
	}
	t.Stop()
	if ok {
		// One more than it read: a write that went in after another
		// section's access would lose that section's update, unless the
		// fence refuses it.
		w.write(s, lctx, "exit", read+1, w.cfg.LateWrite)
	}
	s.Exit = Now()
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if err := ls.Release(rctx); err != nil {
		s.ReleaseErr = err.Error()
	}
	cancel()
	if stopWatch() {
		close(watched) // Release cancels the context: only if it failed to
	}
	<-watched
	if d := ls.Deadline(); !d.IsZero() {
		s.Deadline = Now().Add(time.Until(d))
	}
	if cause := context.Cause(lctx); errors.Is(cause, lease.ErrLost) || errors.Is(cause, lease.ErrClosed) {
		// The AfterFunc's goroutine may read the clock after this one
		// has seen the loss and made its late write: a loss recorded
		// after that write would stretch the section over a successor's
		// entry, an overlap the holder never acted in.
		if knew != 0 && knew < lost {
			lost = knew
		}
		s.Lost, s.LostErr = lost, cause.Error()
	}
	w.emit(Record{Section: s})
}

// write sends one fenced access (phase "enter" reads, "exit" writes value),
// unless the lease is no longer valid and late is not set. Issued is read
// before the check, so an access issued after the loss is one the holder
// should not have made. It reports the value read or written, and whether
// the resource took it.
func (w *goroutine) write(s *Section, lctx context.Context, phase string, value int64, late bool) (int64, bool) {
	issued := Now()
	if lctx.Err() != nil && !late {
		s.Skipped++
		return 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ok, v, err := w.resource.Write(ctx, s.Token, s.ID, phase, value, issued)
	wr := Write{Phase: phase, Issued: issued, Done: Now(), Accepted: ok, Value: v}
	if err != nil {
		wr.Err = err.Error()
	}
	s.Writes = append(s.Writes, wr)
	return v, ok
}

// noLock excludes nobody: each Acquire draws the next token from the lock's
// fencing counter and returns a lease at once.
type noLock struct {
	rc       rueidis.Client
	name     string
	unfenced bool
}

func (n *noLock) Acquire(ctx context.Context) (*lease.Lease, error) {
	tok := uint64(1)
	if !n.unfenced {
		var err error
		if tok, err = n.rc.Do(ctx, n.rc.B().Incr().Key("none-token:"+n.name).Build()).AsUint64(); err != nil {
			return nil, err
		}
	}
	h := core.NewHold(core.HoldConfig{Name: n.name, Owner: "none", TTL: time.Hour, Members: n})
	return h.NewLease(ctx, tok)
}

// Release gives up nothing: no lock was taken.
func (n *noLock) Release(context.Context, string, bool) error { return nil }

func (n *noLock) TryAcquire(ctx context.Context) (*lease.Lease, error) { return n.Acquire(ctx) }

func (n *noLock) AcquireAsync(ctx context.Context) *lease.Future {
	f, run := core.NewFuture(ctx, n.Acquire)
	run()
	return f
}
