package engine

import (
	"context"

	"github.com/leasehold/leasehold/internal/core"
	"github.com/leasehold/leasehold/internal/lua"
)

// Protocol is one lock kind's part in its locks' life: the scripts that try,
// release and renew a hold, and where its waiters are woken. The lock
// packages implement it; the Engine calls it and does everything else
// (waiting, reentrancy, holds, futures, errors).
type Protocol interface {
	// Kind names the lock kind in observed events: "rlock", "fair", ...
	Kind() string
	// Try makes one attempt for owner. wait is set when the caller will
	// wait for the lock (Acquire) and clear for a single attempt
	// (TryAcquire) and for a reentrant one: only an attempt that waits may
	// leave a trace of its waiting (a fair lock's place in the queue, a
	// writer's announcement).
	Try(ctx context.Context, owner string, wait bool) (lua.Grant, error)
	// Release gives up one hold of owner, or every hold when all is set.
	// requestID names the release, so that a retry is answered from the
	// unlock latch. It returns lua.Freed, lua.StillHeld or lua.NotHeld.
	Release(ctx context.Context, owner, requestID string, all bool) (int64, error)
	// Renewal is the keeper's renewal of owner's watchdog lease, nil when
	// the kind has none.
	Renewal(owner string) *core.Renewal
	// Wakeup names where owner's waits are woken: the channel its release
	// messages come on, and the key whose invalidation also wakes it ("" for
	// none).
	Wakeup(owner string) (channel, key string)
}

// NonReentrant is implemented by a Protocol whose holds are never re-entered
// (a semaphore's permits): an Acquire under a lease's context of the same
// lock takes a hold of its own, under a new owner, as from any other
// context. Without it the Engine re-enters the hold the context carries.
type NonReentrant interface {
	NonReentrant()
}

// Counted is implemented by a Protocol whose channel carries counts rather
// than unlock messages (a semaphore's, the permits available after each
// change): each of its waiters waits for Weight permits, and the hub wakes
// as many waiters as a message's count covers (hub.Counted).
type Counted interface {
	Weight() int
}

// Abandoner is implemented by a Protocol whose waiters leave a trace besides
// a hold (a fair lock's place in the queue, a writer's announcement): Abandon
// removes owner's when it stops waiting.
type Abandoner interface {
	Abandon(ctx context.Context, owner string) error
}
