package leasestate

import (
	"context"
	"sync"
)

// Future is an acquisition under way, of a lease of type L.
type Future[L comparable] struct {
	done    chan struct{}
	cancel  context.CancelFunc
	release func(L) // gives back a lease nobody will take

	mu        sync.Mutex
	lease     L
	err       error
	taken     bool // Result has handed the lease out
	cancelled bool
}

// NewFuture returns a Future for acquire and the function that runs the
// attempt: the caller runs it exactly once, in a goroutine it waits for.
// acquire gets a context derived from ctx that Cancel cancels; release
// gives back a lease won after Cancel, or never taken by Result.
func NewFuture[L comparable](ctx context.Context, acquire func(context.Context) (L, error), release func(L)) (*Future[L], func()) {
	actx, cancel := context.WithCancel(ctx)
	f := &Future[L]{done: make(chan struct{}), cancel: cancel, release: release}
	return f, func() {
		l, err := acquire(actx)
		var zero L
		f.mu.Lock()
		unwanted := f.cancelled && l != zero
		if unwanted {
			f.lease, f.err = zero, context.Canceled
		} else {
			f.lease, f.err = l, err
		}
		f.mu.Unlock()
		if unwanted {
			f.release(l)
		}
		cancel()
		close(f.done)
	}
}

// Started reports whether NewFuture made f: a zero Future is none.
func (f *Future[L]) Started() bool { return f.done != nil }

// Done is closed when the attempt has ended.
func (f *Future[L]) Done() <-chan struct{} { return f.done }

// Result waits for the attempt to end and returns its lease, or its error;
// from then on the lease is the caller's.
func (f *Future[L]) Result() (L, error) {
	<-f.done
	f.mu.Lock()
	defer f.mu.Unlock()
	f.taken = true
	return f.lease, f.err
}

// Cancel stops the attempt, waits for it to end, and gives back a lease it
// won that Result has not handed out.
func (f *Future[L]) Cancel() {
	f.mu.Lock()
	f.cancelled = true
	f.mu.Unlock()
	f.cancel()
	<-f.done
	var zero L
	f.mu.Lock()
	l := zero
	if !f.taken && f.lease != zero {
		l, f.lease, f.err = f.lease, zero, context.Canceled
	}
	f.mu.Unlock()
	if l != zero {
		f.release(l)
	}
}
