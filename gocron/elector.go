package leaseholdgocron

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/election"
	"github.com/leasehold/leasehold/lease"
)

// Elector is a gocron.Elector over a leasehold election: gocron runs jobs
// only where it leads. Safe for concurrent use.
type Elector struct {
	name   string
	cancel context.CancelFunc
	done   chan struct{} // closed when the campaign goroutine has ended

	mu     sync.Mutex
	ls     *lease.Lease // the leadership while it is held
	err    error        // why the Elector does not lead, when not for another leader
	closed bool
}

var _ gocron.Elector = (*Elector)(nil)

// NewElector campaigns in the election name on c, with opts, until Close:
// again whenever the leadership is lost. A leader that dies leads until its
// lease runs out.
func NewElector(c *leasehold.Client, name string, opts ...leasehold.LockOption) *Elector {
	ctx, cancel := context.WithCancel(context.Background())
	e := &Elector{name: name, cancel: cancel, done: make(chan struct{})}
	value := ""
	if c != nil {
		value = c.ID()
	}
	go e.campaign(ctx, election.New(c, name, opts...), value)
	return e
}

// IsLeader returns nil while this Client leads, as far as its lease knows,
// and otherwise an error wrapping lease.ErrNotAcquired (and the reason, if
// not another leader). No round trip.
func (e *Elector) IsLeader(context.Context) error {
	e.mu.Lock()
	ls, err := e.ls, e.err
	e.mu.Unlock()
	if ls != nil {
		if err = ls.Err(); err == nil {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("leaseholdgocron: election %s: %w: %w", e.name, lease.ErrNotAcquired, err)
	}
	return fmt.Errorf("leaseholdgocron: election %s: %w: another leads", e.name, lease.ErrNotAcquired)
}

// Close stops campaigning and resigns, so that another leads at once, and
// returns once its goroutine has ended, with the resignation's error.
func (e *Elector) Close() error {
	e.cancel()
	<-e.done
	e.mu.Lock()
	ls := e.ls
	if e.closed {
		ls = nil
	}
	e.ls, e.err, e.closed = nil, lease.ErrClosed, true
	e.mu.Unlock()
	if ls == nil {
		return nil
	}
	return ls.Release(context.Background())
}

// campaign leads, or waits to, until ctx ends: each leadership until it is
// lost, then a new campaign. A campaign that fails is tried again after a
// backoff, unless the Client is closed or the input is invalid.
func (e *Elector) campaign(ctx context.Context, el *election.Election, value string) {
	defer close(e.done)
	const first, most = 100 * time.Millisecond, 5 * time.Second
	wait := first
	for ctx.Err() == nil {
		ls, err := el.Campaign(ctx, value)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			e.set(nil, err)
			if errors.Is(err, lease.ErrClosed) || errors.Is(err, lease.ErrInvalid) {
				return
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			wait = min(2*wait, most)
			continue
		}
		wait = first
		e.set(ls, nil)
		select {
		case <-ls.Lost():
			e.set(nil, ls.Err())
		case <-ctx.Done():
			// Close resigns: it holds the lease from here.
			return
		}
	}
}

func (e *Elector) set(ls *lease.Lease, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ls, e.err = ls, err
}
