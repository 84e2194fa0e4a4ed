package lease

import (
	"context"
	"time"
)

// Kind is what happened to a lease, in an Event: its name in lower case.
type Kind string

// The kinds of Event.
const (
	// Acquired: an Acquire or TryAcquire returned a lease (Waited set).
	Acquired Kind = "acquired"
	// Abandoned: an Acquire or TryAcquire returned without the lock
	// (Waited and Err set): another owner held it (TryAcquire), its ctx
	// ended, the Client closed, bad input, or Redis failed it.
	Abandoned Kind = "abandoned"
	// Renewed: a renewal round confirmed a watchdog hold (Took set: the
	// round's time).
	Renewed Kind = "renewed"
	// Released: a lease was released (Held set; Err set if the release
	// failed).
	Released Kind = "released"
	// Lost: a hold was lost (Held and Err set).
	Lost Kind = "lost"
	// Warning: the Client found something in Redis that puts its locks at
	// risk or slows them, once per cause (Err says what: a memory policy
	// that can evict lock keys, PUBLISH or SUBSCRIBE refused by an ACL).
	Warning Kind = "warning"
)

// Event is one thing that happened to a lease, as an Observer hears it.
type Event struct {
	Kind Kind
	// Lock is the kind of lock: "rlock", "fair", "rw-read", "rw-write",
	// "semaphore" (its permits), "election".
	Lock  string
	Name  string // the lock name
	Owner string // CLIENT_ID:LEASE_ID; empty for Abandoned
	Token uint64 // fencing token (Acquired, Released)
	// Context is the ctx the call was made with: Acquire's or TryAcquire's
	// (Acquired, Abandoned), Release's (Released); nil for the events of
	// the keeper (Renewed, Lost). A tracer finds the caller's span in it.
	Context context.Context
	// Attempts is how many times the acquisition ran its script (Acquired,
	// Abandoned): 1 for a lock taken at once.
	Attempts int
	// Round is how many leases the renewal round renewed (Renewed).
	Round int
	// Waited is how long Acquire waited (Acquired, Abandoned).
	Waited time.Duration
	// Held is how long the lease or hold was held (Released, Lost).
	Held time.Duration
	// Took is how long the renewal round took (Renewed).
	Took time.Duration
	// Err says why (Abandoned, Lost, a failed Release).
	Err error
}

// Observer hears of the life of a Client's leases. Observe runs, possibly
// concurrently, on the goroutines doing the work: it must be quick and must
// not block.
type Observer interface {
	Observe(Event)
}

// ObserverFunc adapts a function to an Observer.
type ObserverFunc func(Event)

// Observe calls f(e).
func (f ObserverFunc) Observe(e Event) { f(e) }
