package quorum

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/leasehold/leasehold/internal/core"
	"github.com/leasehold/leasehold/internal/engine"
	"github.com/leasehold/leasehold/internal/retry"
	"github.com/leasehold/leasehold/lease"
)

// kind is what a quorum needs of its members.
type kind int

const (
	every    kind = iota // Multi: every member
	majority             // RedLock: N/2+1 members
)

func (k kind) String() string {
	if k == every {
		return "multi"
	}
	return "redlock"
}

// lock is a Multi or a RedLock over its members. It implements lease.Locker.
type lock struct {
	// Group runs the lock's goroutines on its members' Clients, so their
	// Close waits for them, and lets a quorum be a member of another.
	engine.Group
	kind    kind
	members []lease.Locker
	cfg     Config
	name    string
	needed  int        // members that make the quorum
	err     error      // bad input, returned by every Acquire
	raise   bool       // every member can raise its fencing counter
	scope   core.Scope // its leases re-enter this lock alone
}

var _ lease.Locker = (*lock)(nil)

func newLock(k kind, cfg Config, members []lease.Locker) *lock {
	var known []lease.Locker
	for _, m := range members {
		if !isNil(m) {
			known = append(known, m)
		}
	}
	q := &lock{Group: engine.NewGroup(known), scope: core.NewGroupScope(), kind: k, members: slices.Clone(members), cfg: cfg.withDefaults(), raise: len(members) > 0}
	q.needed = len(members)
	if k == majority {
		q.needed = len(members)/2 + 1
	}
	names := make([]string, len(members))
	for i, m := range members {
		if !isNil(m) {
			names[i] = engine.NameOf(m)
		}
		if names[i] == "" {
			names[i] = "#" + strconv.Itoa(i)
		}
		if isNil(m) || !engine.CanRaiseToken(m) {
			q.raise = false
		}
	}
	q.name = k.String() + "(" + strings.Join(names, ",") + ")"
	q.err = q.check(cfg)
	return q
}

// check reports bad input: no members, a nil member, the same member twice,
// two members of a RedLock on one Client, a Config out of range.
func (q *lock) check(cfg Config) error {
	if len(q.members) == 0 {
		return fmt.Errorf("%w: %s with no lockers", lease.ErrInvalid, q.kind)
	}
	for i, m := range q.members {
		if isNil(m) {
			return fmt.Errorf("%w: locker %d is nil", lease.ErrInvalid, i)
		}
		// The same locker twice could never be held twice at once: every
		// attempt would fail. Only comparable lockers can be told apart.
		if !reflect.TypeOf(m).Comparable() {
			continue
		}
		for j := range i {
			if q.members[j] == m { // m's type is comparable: no panic
				return fmt.Errorf("%w: lockers %d and %d are the same", lease.ErrInvalid, j, i)
			}
		}
	}
	if q.kind == majority {
		// A RedLock counts each member as an independent Redis: two on
		// one Client are one node counted twice toward the majority.
		// Multi may hold several locks of one Client.
		on := make(map[*core.Client]int) // Client -> the first member on it
		for i, m := range q.members {
			for _, c := range engine.Clients(m) {
				if j, ok := on[c]; ok && j != i {
					return fmt.Errorf("%w: lockers %d and %d run on the same Client, one Redis counted twice toward the majority",
						lease.ErrInvalid, j, i)
				}
				on[c] = i
			}
		}
	}
	if err := cfg.check(); err != nil {
		return err
	}
	return nil
}

func isNil(m lease.Locker) bool {
	if m == nil {
		return true
	}
	v := reflect.ValueOf(m)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Interface, reflect.Slice, reflect.Chan:
		return v.IsNil()
	}
	return false
}

// Acquire blocks until the quorum is held or ctx is done; ctx's deadline is
// the longest the caller will wait. Each attempt asks every member at once,
// each under its own NodeTimeout, and an attempt that fails gives back all it
// took before a random delay and the next attempt. On failure Acquire returns
// ctx.Err() (wrapping the last attempt's error too) and holds nothing. If ctx
// carries a lease of this quorum, Acquire re-enters it.
func (q *lock) Acquire(ctx context.Context) (*lease.Lease, error) {
	return q.named("acquire")(q.acquire(ctx, "acquire", true))
}

// TryAcquire makes one attempt, bounded by NodeTimeout per member: an error
// wrapping lease.ErrNotAcquired, with each member's answer, when the quorum
// was not reached. It holds nothing on failure.
func (q *lock) TryAcquire(ctx context.Context) (*lease.Lease, error) {
	return q.named("try-acquire")(q.acquire(ctx, "try-acquire", false))
}

// named returns a function that turns the error of operation op into the
// quorum's *lease.Error, unless it is one already.
func (q *lock) named(op string) func(*lease.Lease, error) (*lease.Lease, error) {
	return func(l *lease.Lease, err error) (*lease.Lease, error) {
		var le *lease.Error
		if err != nil && !(errors.As(err, &le) && le.Name == q.name) {
			err = &lease.Error{Op: op, Name: q.name, Err: err}
		}
		return l, err
	}
}

// AcquireAsync starts Acquire in a goroutine that ends with the attempt: once
// held, on failure, or when ctx ends or the Future is cancelled. Cancelling
// the Future before its Lease is taken leaves nothing held.
func (q *lock) AcquireAsync(ctx context.Context) *lease.Future {
	// Its members' Clients wait for it on Close: it ends when their time
	// is up.
	ctx, stop := q.Bound(ctx)
	f, run := core.NewFuture(ctx, q.Acquire)
	q.Go(func() { defer stop(); run() })
	return f
}

func (q *lock) acquire(ctx context.Context, op string, wait bool) (*lease.Lease, error) {
	if q.err != nil {
		return nil, q.err
	}
	if ctx.Err() != nil {
		return nil, core.CtxErr(ctx, op, q.name, nil)
	}
	if h := core.HoldFrom(ctx, q.scope, q.name); h != nil {
		return q.reenter(ctx, h)
	}
	first := -1
	for {
		ls, next, err := q.attempt(ctx, first)
		switch {
		case ls != nil:
			return ls, nil
		case ctx.Err() != nil:
			return nil, core.CtxErr(ctx, op, q.name, err)
		case !wait || !retry.Transient(err):
			return nil, err
		}
		first = next
		t := time.NewTimer(q.cfg.delay())
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, core.CtxErr(ctx, op, q.name, err)
		case <-t.C:
		}
	}
}

// attempt makes one try at the quorum. first, when not -1, is a member of a
// Multi that refused the last try: it is waited for (Acquire) before the
// others are tried, while nothing else is held. On failure attempt holds
// nothing, and returns why and the member the next try should wait for.
func (q *lock) attempt(ctx context.Context, first int) (*lease.Lease, int, error) {
	n := len(q.members)
	leases := make([]*lease.Lease, n)
	errs := make([]error, n)
	links := make([]*link, n)
	if first >= 0 {
		links[first] = &link{Context: ctx}
		// A Multi never waits while it holds a member: two Multis over the
		// same locks in different orders cannot each hold what the other
		// waits for, so they cannot deadlock.
		if leases[first], errs[first] = q.members[first].Acquire(links[first]); errs[first] != nil {
			return nil, first, fmt.Errorf("waiting for member %d: %w", first, errs[first])
		}
	}
	// The time spent is measured on the monotonic clock (time.Now carries
	// it), from before the first request of this round.
	start := time.Now()
	q.tryOthers(ctx, first, leases, errs, links)
	held := 0
	for _, l := range leases {
		if l != nil {
			held++
		}
	}
	if held < q.needed {
		releaseAll(leases)
		return nil, q.blocker(errs), q.shortfall(held, errs)
	}
	ls, err := q.seal(ctx, leases, links, start)
	return ls, -1, err
}

// tryOthers asks every member but first at once, each under its own
// NodeTimeout, and fills in its lease or error and the context it was
// asked under.
func (q *lock) tryOthers(ctx context.Context, first int, leases []*lease.Lease, errs []error, links []*link) {
	var wg sync.WaitGroup
	for i, m := range q.members {
		if i == first {
			continue
		}
		wg.Go(func() {
			mctx, cancel := context.WithTimeout(ctx, q.cfg.NodeTimeout)
			defer cancel()
			links[i] = &link{Context: mctx}
			// A member whose answer is lost to the timeout may have taken
			// its lock: the member's own machinery undoes an attempt that
			// errored (rlock's engine releases the owner in the background).
			leases[i], errs[i] = m.TryAcquire(links[i])
		})
	}
	wg.Wait()
}

// seal turns the member leases of an attempt that held a quorum, begun at
// start, into the quorum's Lease: it draws the token, writes it back, and
// checks that the validity has not run out meanwhile. On failure it
// releases every member lease.
func (q *lock) seal(ctx context.Context, leases []*lease.Lease, links []*link, start time.Time) (*lease.Lease, error) {
	// The lease's validity is the needed-th latest of the members' deadlines
	// (each is TTL after its own request was sent, less the member's drift
	// margin), less the quorum's drift: TTL - elapsed - drift. The TTL is
	// read off those deadlines, as a Locker does not tell its lease time.
	var ttl time.Duration
	if until, _ := validUntil(leases, q.needed, 0); !until.IsZero() {
		ttl = until.Sub(start)
	}
	drift := q.cfg.drift(ttl)
	token := uint64(0)
	for _, l := range leases {
		if l != nil {
			token = max(token, l.Token())
		}
	}
	if err := q.fence(ctx, leases, token); err != nil {
		releaseAll(leases)
		return nil, err
	}
	// Checked last, after the token was written back, so that a lease handed
	// out was valid through the whole acquisition.
	until, ok := validUntil(leases, q.needed, drift)
	if !ok || (!until.IsZero() && !time.Now().Before(until)) {
		releaseAll(leases)
		return nil, fmt.Errorf("%w: validity used up: the attempt took %v, drift %v",
			lease.ErrNotAcquired, time.Since(start).Round(time.Millisecond), drift)
	}
	return q.newLease(ctx, leases, links, token, drift), nil
}

// blocker is the member a Multi waits for before its next attempt: the first
// that another owner holds. A RedLock does not wait on any one node.
func (q *lock) blocker(errs []error) int {
	if q.kind != every {
		return -1
	}
	for i, err := range errs {
		if errors.Is(err, lease.ErrNotAcquired) {
			return i
		}
	}
	return -1
}

// shortfall explains an attempt that held too few members. Bad input and
// closed Clients that leave too few members usable are returned as such
// (permanent: Acquire stops), anything else wraps lease.ErrNotAcquired.
func (q *lock) shortfall(held int, errs []error) error {
	closed := 0
	var closedErr error
	for i, err := range errs {
		if errors.Is(err, lease.ErrInvalid) {
			return fmt.Errorf("member %d: %w", i, err)
		}
		if errors.Is(err, lease.ErrClosed) {
			closed++
			closedErr = err
		}
	}
	if len(errs)-closed < q.needed {
		return fmt.Errorf("%d of %d members closed, %d needed: %w", closed, len(errs), q.needed, closedErr)
	}
	var b strings.Builder
	for i, err := range errs {
		if err != nil {
			fmt.Fprintf(&b, "; member %d: %v", i, err)
		}
	}
	return fmt.Errorf("%w: %d of %d members held, %d needed%s",
		lease.ErrNotAcquired, held, len(errs), q.needed, b.String())
}

// validUntil is when the member leases still held stop making a quorum: the
// needed-th latest of their deadlines, less drift. It is the zero time when
// needed of them have no deadline of their own, and ok is false when fewer
// than needed are held.
func validUntil(leases []*lease.Lease, needed int, drift time.Duration) (until time.Time, ok bool) {
	var ds []time.Time
	for _, l := range leases {
		if l == nil {
			continue
		}
		select {
		case <-l.Lost():
			continue
		default:
		}
		ds = append(ds, l.Deadline())
	}
	if len(ds) < needed {
		return time.Time{}, false
	}
	// Latest first; a zero deadline (none) is later than any.
	slices.SortFunc(ds, func(a, b time.Time) int {
		switch {
		case a.Equal(b):
			return 0
		case a.IsZero() || (!b.IsZero() && a.After(b)):
			return -1
		}
		return 1
	})
	d := ds[needed-1]
	if d.IsZero() {
		return d, true
	}
	return d.Add(-drift), true
}

// releaseAll gives back the member leases of a failed attempt, in parallel,
// before the next attempt.
func releaseAll(leases []*lease.Lease) {
	_ = releaseLeases(context.Background(), leases)
}

// releaseTimeout bounds the release of one member: a node that has not
// confirmed by then is left to let the lease run out (its renewal stopped at
// the first try).
const releaseTimeout = 2 * time.Second

// releaseLeases releases every non-nil lease in parallel and returns each
// one's error.
func releaseLeases(ctx context.Context, leases []*lease.Lease) []error {
	errs := make([]error, len(leases))
	var wg sync.WaitGroup
	for i, l := range leases {
		if l == nil {
			continue
		}
		wg.Go(func() {
			rctx, cancel := context.WithTimeout(ctx, releaseTimeout)
			defer cancel()
			errs[i] = l.Release(rctx)
		})
	}
	wg.Wait()
	return errs
}
