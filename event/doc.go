// Package event wakes goroutines waiting on Redis without polling, for
// building a primitive of your own (a latch, a barrier): a waiter is woken by
// a message on its channel or by an invalidation of its key.
//
//	h := event.NewHub(rc)
//	w, err := h.Watch(ctx, "latch:{jobs}:done", "latch:{jobs}")
//	defer w.Leave()
//	for !done() { <-w.C() }
//
// A message wakes one waiter, the one waiting longest, so that one release
// wakes one contender; the message "1" wakes every waiter of the channel.
// The hub keeps one subscription per channel however many wait on it, and
// waking never blocks the notifier. A leasehold Client runs the same hub
// internally for its locks.
//
// More: https://github.com/leasehold/leasehold/blob/main/docs/event.md
package event
