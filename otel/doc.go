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
// users of leasehold who do not use OpenTelemetry never download it. It uses
// the global providers unless WithMeterProvider and WithTracerProvider choose
// others.
//
// Metrics are leasehold.acquire.duration, leasehold.hold.duration,
// leasehold.leases.lost, leasehold.renewal.duration, leasehold.renewal.size
// and leasehold.election.leader (1 while this process leads the election
// named by leasehold.lock.name, 0 once it no longer does), and from
// RegisterClient leasehold.leases.held, leasehold.waiters,
// leasehold.subscriptions, leasehold.renewal.rounds and leasehold.wakeups;
// from RegisterGroup, a partition group member's leasehold.partition.owned,
// .assigned, .members and .rebalances.
// Acquisitions and holds are counted by lock kind and outcome; no metric
// but the leader gauge carries the lock name unless asked (WithLockName, WithNameMapper), since
// names are often unbounded. Spans
// (leasehold.acquire, leasehold.release) always carry the name. The Observer
// does not block, given a batching span processor.
//
// Every attribute, value and span, with PromQL for a dashboard:
// https://github.com/leasehold/leasehold/blob/main/docs/otel.md
package leaseholdotel
