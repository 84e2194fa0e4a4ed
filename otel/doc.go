// Package leaseholdotel records the life of leasehold's leases as
// OpenTelemetry metrics and spans: how long acquisitions wait and how they
// end, how long leases are held, which are lost, how the watchdog's renewal
// rounds go, and, read from the Client, how many leases and waiters there
// are now.
//
//	c, err := leasehold.Open(opt, leasehold.WithObserver(leaseholdotel.New()))
//	if err != nil { return err }
//	unregister, err := leaseholdotel.RegisterClient(c)
//
// It is a module of its own, github.com/leasehold/leasehold/otel, so that
// users of leasehold who do not use OpenTelemetry never download it. By
// default it uses the global providers (otel.GetMeterProvider,
// otel.GetTracerProvider); WithMeterProvider and WithTracerProvider choose
// others.
//
// # Metrics
//
// Attributes: leasehold.lock.kind is the Event's Lock ("rlock", "fair",
// "rw-read", "rw-write", "semaphore"); leasehold.outcome and leasehold.cause
// take the values listed.
//
//	leasehold.acquire.duration  histogram, s  each Acquire and TryAcquire, from its call to its return
//	    leasehold.lock.kind, leasehold.outcome: acquired, not_acquired (TryAcquire found
//	    the lock held), timed_out (ctx deadline), cancelled (ctx cancelled), closed (the
//	    Client closed), error (Redis, bad input, replicas that did not acknowledge)
//	leasehold.hold.duration     histogram, s  each lease released, each hold lost
//	    leasehold.lock.kind, leasehold.outcome: released, lost, closed
//	leasehold.leases.lost       counter       holds lost while held
//	    leasehold.lock.kind, leasehold.cause: lost (a renewal found the lock gone, or the
//	    lease ran out before a renewal was confirmed), closed (the Client was closed)
//	leasehold.renewal.duration  histogram, s        each renewal round, once
//	leasehold.renewal.size      histogram, {lease}  the leases each round renewed
//
// The watchdog reports a renewal round once per lease it renewed, each
// event with the round's duration and size; the Observer records the round
// once. A released lease's hold counts each reentrant lease on its own; a
// lost hold counts once. A release that fails records no hold time: the
// lease was lost before (and recorded then), or is still held.
//
// RegisterClient adds what only the Client knows, read from its Stats at
// each collection:
//
//	leasehold.leases.held      up-down counter  leases held now
//	leasehold.waiters          up-down counter  goroutines waiting for a lock now
//	leasehold.subscriptions    up-down counter  lock channels subscribed for waiters now
//	leasehold.renewal.rounds   counter          renewal rounds made
//	leasehold.wakeups          counter          wake-ups delivered to waiters
//
// # Lock names and cardinality
//
// Lock names are often unbounded (one per order id), and every distinct
// attribute value makes a time series of its own. So metrics carry no lock
// name unless asked: WithLockName adds it as it is, for a few well-known
// names; WithNameMapper adds what a function makes of it ("orders:1234" to
// "orders"). Spans are not aggregated: they always carry the name.
//
// # Spans
//
// leasehold.acquire spans each Acquire and TryAcquire, from its call (now
// less the time it waited) to its return, as a child of the span in the ctx
// it was called with. Attributes: leasehold.lock.kind, leasehold.lock.name,
// leasehold.lock.owner and leasehold.lock.token (when held),
// leasehold.outcome, leasehold.acquire.attempts (scripts run) and
// leasehold.acquire.wait (s). An acquisition that failed records its error
// and has status Error, except not_acquired: TryAcquire finding the lock
// held is an answer, not a failure.
//
// leasehold.release marks each Release, as a child of the span in its ctx,
// at the moment it was done (the Event does not carry the release's own
// duration, so the span has none). Attributes: leasehold.lock.kind,
// leasehold.lock.name, leasehold.lock.owner, leasehold.lock.token,
// leasehold.outcome (released, not_held, closed, error) and
// leasehold.hold.duration (s). A failed release records its error and has
// status Error.
//
// Renewals and losses happen on the Client's keeper, outside any caller's
// trace: they make metrics, not spans.
//
// The Observer runs on the goroutines that acquire, renew and release. It
// does not block: instruments record in memory, and spans go to the
// provider's span processors (use a batching one, as in production).
package leaseholdotel
