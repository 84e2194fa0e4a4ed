package lease

import (
	"context"
	"sync"
	"time"

	"github.com/leasehold/leasehold/internal/access"
)

// Future is an acquisition under way, started by AcquireAsync.
type Future struct {
	done   chan struct{}
	cancel context.CancelFunc

	mu        sync.Mutex
	lease     *Lease
	err       error
	taken     bool // Result has handed the lease out
	cancelled bool
}

func init() {
	access.NewFuture = func(ctx context.Context, acquire func(context.Context) (any, error)) (any, func()) {
		return newFuture(ctx, func(ctx context.Context) (*Lease, error) {
			l, err := acquire(ctx)
			ls, _ := l.(*Lease)
			return ls, err
		})
	}
}

// newFuture returns a Future for acquire and the function that runs the
// attempt: the caller runs it exactly once, in a goroutine it waits for.
// acquire gets a context derived from ctx that Cancel cancels.
func newFuture(ctx context.Context, acquire func(context.Context) (*Lease, error)) (*Future, func()) {
	actx, cancel := context.WithCancel(ctx)
	f := &Future{done: make(chan struct{}), cancel: cancel}
	return f, func() {
		l, err := acquire(actx)
		f.mu.Lock()
		unwanted := f.cancelled && l != nil
		if unwanted {
			f.lease, f.err = nil, context.Canceled
		} else {
			f.lease, f.err = l, err
		}
		f.mu.Unlock()
		if unwanted {
			releaseUnwanted(l)
		}
		cancel()
		close(f.done)
	}
}

// Done is closed when the attempt has ended, held or not.
func (f *Future) Done() <-chan struct{} { return f.done }

// Result waits for the attempt to end and returns its lease, or its error.
// From then on the lease is the caller's: Cancel no longer releases it.
func (f *Future) Result() (*Lease, error) {
	<-f.done
	f.mu.Lock()
	defer f.mu.Unlock()
	f.taken = true
	return f.lease, f.err
}

// Cancel stops the attempt and waits for it to end. If the attempt won the
// lock and Result has not handed the lease out, Cancel releases it: after
// Cancel returns, the Future holds nothing. Cancel may be called any number
// of times.
func (f *Future) Cancel() {
	f.mu.Lock()
	f.cancelled = true
	f.mu.Unlock()
	f.cancel()
	<-f.done
	f.mu.Lock()
	var l *Lease
	if !f.taken && f.lease != nil {
		l, f.lease, f.err = f.lease, nil, context.Canceled
	}
	f.mu.Unlock()
	if l != nil {
		releaseUnwanted(l)
	}
}

// releaseUnwanted releases a lease nobody will use, within a bounded time.
func releaseUnwanted(l *Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = l.Release(ctx) // best effort: a failed release lets the lease run out
}
