package event

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/hub"
)

// errClosed is the error of a Watch on a closed hub.
var errClosed = errors.New("event: hub closed")

// Hub turns messages and key invalidations into wake-ups of waiters. Create
// one with NewHub and Close it when done.
type Hub struct {
	h      *hub.Hub
	closed chan struct{} // closed by Close, before the hub closes
	once   sync.Once
}

// NewHub returns a hub subscribing through rc. Watch reads a key it is
// given through rc's client-side cache, so that Redis tells of its next
// change: feed rc's invalidations (rueidis.ClientOption.OnInvalidations) to
// Invalidate, and that change wakes its waiters; a client without the cache
// only reads it, and messages alone wake.
func NewHub(rc rueidis.Client) *Hub {
	return &Hub{h: hub.NewHub(rc, hub.Tracking()), closed: make(chan struct{})}
}

// Watch registers a waiter on channel, woken also when key changes ("" for
// none), and returns once it is subscribed: check your condition after Watch,
// then wait on C. On failure nothing stays registered.
func (h *Hub) Watch(ctx context.Context, channel, key string) (*Waiter, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w, err := h.h.Watch(channel, key)
	if err != nil {
		return nil, errClosed
	}
	select {
	case <-w.Ready():
	case <-ctx.Done():
		w.Leave(false)
		return nil, ctx.Err()
	case <-h.closed:
		w.Leave(false)
		return nil, errClosed
	}
	if err := w.Track(ctx); err != nil {
		w.Leave(false)
		return nil, fmt.Errorf("event: track %s: %w", key, err)
	}
	return &Waiter{w: w}, nil
}

// Invalidate wakes one waiter of each channel whose key is among keys (every
// channel if nil); on a subscribed channel 10ms later, unless a message woke
// one meanwhile (the same change's). Call it from
// rueidis.ClientOption.OnInvalidations; it does not block.
func (h *Hub) Invalidate(keys []rueidis.RedisMessage) { h.h.Invalidate(keys) }

// Close wakes every waiter, drops every subscription and returns once the
// hub's goroutines have ended; a Watch then fails. Waiters must still Leave.
func (h *Hub) Close() {
	h.once.Do(func() { close(h.closed) })
	h.h.Close(context.Background())
}

// Waiter is one goroutine's place on a channel.
type Waiter struct {
	w    *hub.Waiter
	once sync.Once
}

// C receives a value for each wake-up, and is never closed. Redis stops
// tracking a key once it invalidates it: read it through rc's cache (DoCache)
// or Watch again to hear its next change.
func (w *Waiter) C() <-chan struct{} { return w.w.C() }

// Leave unregisters the waiter, handing an unreceived wake-up to the next;
// the last to leave unsubscribes. Later calls do nothing.
func (w *Waiter) Leave() { w.once.Do(func() { w.w.Leave(false) }) }
