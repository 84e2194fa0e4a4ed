package election

import (
	"context"
	"time"

	"github.com/leasehold/leasehold/internal/retry"
)

// Observe sends the current leader, then each change (no Owner: nobody
// leads), never going back a term; a slow reader gets the latest. The channel
// is closed when ctx ends, the Client closes, or on bad input.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	ch := make(chan Leader, 1)
	if e.base.Check("observe") != nil || ctx.Err() != nil || !e.c.Go(func() { e.observe(ctx, ch) }) {
		close(ch)
	}
	return ch
}

// observe is Observe's producer, a goroutine the Client waits for on Close.
//
// It listens on the election's channel, not on the lock's: the hub hands an
// unlock message "0" to one waiter of a Client, which must be a campaigner,
// while the election's message wakes every waiter of its channel, so every
// observer hears it. An invalidation of the leader key also wakes one
// observer per Client; the others learn of an expiry from their timers,
// within a millisecond of the key's, and of a deletion from the leader's
// next renewal, which publishes the end of its term (or, if the leader is
// dead too, from their timers).
func (e *Election) observe(ctx context.Context, ch chan Leader) {
	defer close(ch)
	// Ends with the Client too, so that Close does not wait on a read.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(e.c.Context(), cancel)()
	w, err := e.c.Hub().Watch(e.s.Channel(), e.s.LeaderKey())
	if err != nil {
		return // the hub is closed: the Client is closing
	}
	defer w.Leave(false)
	b := retry.Backoff(10*time.Millisecond, time.Second)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	ready := w.Ready()
	var last Leader // the last report; none before the first
	for {
		// Tracked before the read, so that a change after the read is
		// invalidated; a message is heard only once Ready, hence the read
		// again then.
		_ = w.Track(ctx)
		term, ok, err := e.s.Leader(ctx, e.c.Redis())
		wait := time.Duration(-1) // no timer
		if err != nil {
			wait = b.NextBackOff()
		} else {
			b.Reset()
			var now Leader
			if ok {
				now = Leader{Value: term.Value, Token: term.Token, Owner: term.Owner}
				if term.TTL > 0 {
					// Measured at the server before the reply travelled:
					// the timer fires no earlier than the key expires.
					wait = term.TTL + time.Millisecond
				}
			}
			if l, changed := after(last, now); changed {
				last = l
				offer(ch, l)
			}
		}
		if wait >= 0 {
			t.Reset(wait)
		} else {
			t.Stop()
		}
		select {
		case <-ctx.Done():
			return
		case <-ready:
			ready = nil
		case <-w.C():
		case <-t.C:
		}
	}
}

// after is what an observer whose last report was last reports on reading
// now, and whether it reports anything. It never goes back a term: a read
// older than the last report (a term already reported, or reported over) is
// dropped. The end of a term is reported with the term's token.
func after(last, now Leader) (Leader, bool) {
	switch {
	case now.Owner == "":
		if last.Owner == "" {
			return last, false
		}
		return Leader{Token: last.Token}, true
	case now.Token < last.Token, now.Token == last.Token && (last.Owner == "" || now == last):
		return last, false
	}
	return now, true
}

// offer puts l in ch, a buffer of one that only the producer fills, in place
// of a report the reader has not taken yet.
func offer(ch chan Leader, l Leader) {
	select {
	case ch <- l:
		return
	default:
	}
	select {
	case <-ch:
	default:
	}
	ch <- l // cannot block: the buffer is empty and nobody else sends
}
