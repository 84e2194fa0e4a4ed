package lease

import "github.com/leasehold/leasehold/internal/leasestate"

// Future is an acquisition under way, started by AcquireAsync (a Future{}
// of one's own is an attempt that failed).
type Future struct {
	// s is the attempt's state, and the Future's only field: the locks
	// make an leasestate.Future and hand it out as a *Future (internal/leasestate).
	s leasestate.Future[*Lease]
}

func (f *Future) state() *leasestate.Future[*Lease] { return &f.s }

// Done is closed when the attempt has ended, held or not.
func (f *Future) Done() <-chan struct{} {
	if !f.s.Started() {
		return noHoldContext.Done()
	}
	return f.state().Done()
}

// Result waits for the attempt to end and returns its lease or error. The
// lease is then the caller's: Cancel no longer releases it.
func (f *Future) Result() (*Lease, error) {
	if !f.s.Started() {
		return nil, errNoHold
	}
	return f.state().Result()
}

// Cancel stops the attempt and waits for it to end, releasing (best effort)
// a lease Result has not handed out: the Future then holds nothing. Repeated
// calls do nothing.
func (f *Future) Cancel() {
	if f.s.Started() {
		f.state().Cancel()
	}
}
