package handoff

import "time"

// The marks of waiters that do not listen (see Want): when they say the
// waiter tries next, and how much later it may come.
const (
	// MaxDelay is the longest delay a mark announces. A TryAcquire loop
	// slower than this leaves no mark: a Client busy on the lock would
	// otherwise stand back for longer than a fair share of its own turn.
	MaxDelay = 2 * time.Second
	// PollEvery bounds the sleep of a waiter that does not listen (its
	// subscription refused): it tries at least this often, and its mark
	// says so.
	PollEvery = 250 * time.Millisecond
)

// Want is how a waiter that does not listen on a lock's channel asks for
// its turn: its failed attempt leaves a mark saying it tries again in about
// delay, which a Client passing the lock among its own waiters reads; that
// Client then publishes before the try is due and stands back until the
// mark runs out. The mark says the try is due a little early (a quarter of
// delay, 2ms to 500ms: the Client yields at a release, and a try that comes
// just before it finds the lock taken), and runs out a margin after it
// (half of delay, 10ms to 500ms, and the early part: a loop's ticks come
// late on a busy machine). It never outlives ttl, the lock's lease, as no
// key of a lock outlives its last hold by more. Want returns the mark's
// delay and margin.
func Want(delay, ttl time.Duration) (time.Duration, time.Duration) {
	early := min(max(delay/4, 2*time.Millisecond), delay, 500*time.Millisecond)
	margin := early + min(max(delay/2, 10*time.Millisecond), 500*time.Millisecond)
	delay -= early
	if delay+margin > ttl {
		delay = max(ttl-margin, 0)
	}
	return delay, margin
}
