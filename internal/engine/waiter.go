package engine

import (
	"context"

	"github.com/leasehold/leasehold/internal/hub"
)

// watcher registers waiters for wake-ups: the Client's hub, or a test's.
type watcher interface {
	Watch(channel, key string, opts ...hub.WatchOption) (waiter, error)
	Mark(channel string) hub.Mark
}

// waiter is one wait's registration, as *hub.Waiter.
type waiter interface {
	Ready() <-chan struct{}
	C() <-chan struct{}
	Track(ctx context.Context) error
	Missed(m hub.Mark) bool
	Leave(wakeNext bool)
	// Listening, Wake and Messages make it a candidate of a lock's line
	// (see internal/handoff).
	Listening() bool
	Wake()
	Messages() uint64
}

// hubWatcher is the watcher of a Client's hub.
type hubWatcher struct{ h *hub.Hub }

func (w hubWatcher) Watch(channel, key string, opts ...hub.WatchOption) (waiter, error) {
	ew, err := w.h.Watch(channel, key, opts...)
	if err != nil {
		return nil, err
	}
	return ew, nil
}

func (w hubWatcher) Mark(channel string) hub.Mark { return w.h.Mark(channel) }
