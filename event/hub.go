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

// NewHub returns a hub subscribing through rc. tracking says whether the
// caller feeds rc's client-side-cache invalidations to Invalidate (with
// rueidis.ClientOption.OnInvalidations): Watch then tracks the key it is
// given. Without tracking, wake-ups come from messages only.
func NewHub(rc rueidis.Client, tracking bool) *Hub {
	return &Hub{h: hub.NewHub(rc, tracking), closed: make(chan struct{})}
}

// Watch registers a waiter on channel, woken also when key changes or
// expires (key "" for none), and returns once the channel is subscribed and
// key is tracked: a message published after Watch returns is not missed, so
// check the state you wait for after Watch, then wait on C. The key is the
// channel's: the first Watch of a channel names it for every waiter until
// they all leave. Watch fails with ctx's error, an error of tracking the key,
// or an error once the hub is closed; it then leaves nothing registered.
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

// Invalidate wakes one waiter of each channel whose key is among keys, or of
// every channel when keys is nil (the cache was flushed). Call it from
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

// C receives a value for each wake-up: a message on the channel, an
// invalidation of the key, a resubscription after the connection broke (a
// message may have been missed), or Close. It is never closed. A waiter keeps
// one wake-up until received; a message then wakes the next waiter. Redis
// stops tracking a key once it invalidates it: to hear its next change, read
// the key through rc's cache (DoCache) or Watch again.
func (w *Waiter) C() <-chan struct{} { return w.w.C() }

// Leave unregisters the waiter, handing a wake-up it has not received to the
// next waiter of the channel; the last to leave a channel unsubscribes.
// Calls after the first do nothing.
func (w *Waiter) Leave() { w.once.Do(func() { w.w.Leave(false) }) }
