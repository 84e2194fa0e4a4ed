// Package hub is a Client's hub of wake-ups: it turns unlock messages and
// client-side-cache invalidations of lock keys into wake-ups of the goroutines
// waiting for those locks. Package event is its public face.
//
// The hub keeps one subscription per channel however many goroutines wait on
// it, carried by the Client's one RESP3 connection, and drops it when the last
// waiter leaves.
//
//	w, err := h.Watch("redisson_lock__channel:{orders}", "orders")
//	defer w.Leave(false)
//	select { case <-w.Ready(): case <-w.C(): case <-ctx.Done(): }
//
// A waiter that Watches after a failed attempt may miss a release made in
// between. Take the channel's Mark before the attempt; once registered,
// Missed(mark) says whether to try once more before waiting (it is false
// only when the channel was subscribed and silent all along):
//
//	mark := h.Mark(channel)
//	// ... the attempt fails ...
//	w, err := h.Watch(channel, key)
//	if w.Missed(mark) { /* try again after <-w.Ready() */ }
//
// A message wakes one waiter (the one waiting longest), not every waiter: the
// woken one retries its lock and, if it gives up without trying, hands the
// wake-up on. A message "1" (Redisson's read-unlock) wakes every waiter of the
// channel. On a channel whose messages are counts (a semaphore's: the permits
// available), a message N wakes as many waiters as N permits serve, the
// heaviest first (Counted). Notifying never blocks the notifier.
package hub
