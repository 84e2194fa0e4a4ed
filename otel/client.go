package leaseholdotel

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/metric"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/lease"
)

// stat is one of a Client's counters, as RegisterClient reports it.
type stat struct {
	name, unit, description string
	// counter is true for a count that only rises (a counter), false for
	// one of things there are now (an up-down counter).
	counter bool
	read    func(leasehold.Stats) int64
}

var stats = []stat{
	{"leasehold.leases.held", "{lease}",
		"Leases a Client holds now: one per owner holding a lock, reentrant leases included in their first.",
		false, func(s leasehold.Stats) int64 { return int64(s.Leases) }},
	{"leasehold.waiters", "{waiter}", "Goroutines waiting for a lock to be released now.",
		false, func(s leasehold.Stats) int64 { return int64(s.Waiters) }},
	{"leasehold.subscriptions", "{subscription}", "Channels subscribed for waiters now: one per lock name waited for.",
		false, func(s leasehold.Stats) int64 { return int64(s.Subscriptions) }},
	{"leasehold.renewal.rounds", "{round}", "Renewal rounds of the watchdog: one pipelined round trip each.",
		true, func(s leasehold.Stats) int64 { return int64(s.RenewalRounds) }},
	{"leasehold.wakeups", "{wakeup}", "Wake-ups delivered to waiters.",
		true, func(s leasehold.Stats) int64 { return int64(s.Wakeups) }},
}

// RegisterClient reports c.Stats at each metric collection, without a round
// trip, until unregister is called. Several Clients' counts add up. Only
// WithMeterProvider applies; on error nothing is registered.
func RegisterClient(c *leasehold.Client, opts ...Option) (unregister func() error, err error) {
	if c == nil {
		return nil, fmt.Errorf("leaseholdotel: RegisterClient: nil Client: %w", lease.ErrInvalid)
	}
	m := newConfig(opts).meters.Meter(scope)
	insts := make([]metric.Int64Observable, len(stats))
	observables := make([]metric.Observable, len(stats))
	for i, st := range stats {
		desc, unit := metric.WithDescription(st.description), metric.WithUnit(st.unit)
		if st.counter {
			insts[i], err = m.Int64ObservableCounter(st.name, desc, unit)
		} else {
			insts[i], err = m.Int64ObservableUpDownCounter(st.name, desc, unit)
		}
		if err != nil {
			return nil, fmt.Errorf("leaseholdotel: RegisterClient: %w", err)
		}
		observables[i] = insts[i]
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := c.Stats()
		for i, st := range stats {
			o.ObserveInt64(insts[i], st.read(s))
		}
		return nil
	}, observables...)
	if err != nil {
		return nil, fmt.Errorf("leaseholdotel: RegisterClient: %w", err)
	}
	return reg.Unregister, nil
}
