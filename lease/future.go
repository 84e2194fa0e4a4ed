package lease

import "github.com/leasehold/leasehold/internal/access"

// Future is an acquisition under way, started by AcquireAsync.
type Future access.Future[*Lease]

func (f *Future) state() *access.Future[*Lease] { return (*access.Future[*Lease])(f) }

// Done is closed when the attempt has ended, held or not.
func (f *Future) Done() <-chan struct{} { return f.state().Done() }

// Result waits for the attempt to end and returns its lease or error. The
// lease is then the caller's: Cancel no longer releases it.
func (f *Future) Result() (*Lease, error) { return f.state().Result() }

// Cancel stops the attempt and waits for it to end, releasing (best effort)
// a lease Result has not handed out: the Future then holds nothing. Repeated
// calls do nothing.
func (f *Future) Cancel() { f.state().Cancel() }
