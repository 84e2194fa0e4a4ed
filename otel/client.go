package leaseholdotel

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/lease"
)

// kind is how an observable instrument reports its number.
type kind int

const (
	counter kind = iota // a count that only rises
	upDown              // things there are now, which add up across sources
	gauge               // a value now, which does not add up
)

// stat is one number of a snapshot S (a Client's Stats, a Group's), as an
// observable instrument reports it.
type stat[S any] struct {
	name, unit, description string
	kind                    kind
	read                    func(S) int64
}

var clientStats = []stat[leasehold.Stats]{
	{"leasehold.leases.held", "{lease}",
		"Leases a Client holds now: one per owner holding a lock, reentrant leases included in their first.",
		upDown, func(s leasehold.Stats) int64 { return int64(s.Leases) }},
	{"leasehold.waiters", "{waiter}", "Goroutines waiting for a lock to be released now.",
		upDown, func(s leasehold.Stats) int64 { return int64(s.Waiters) }},
	{"leasehold.subscriptions", "{subscription}", "Channels subscribed for waiters now: one per lock name waited for.",
		upDown, func(s leasehold.Stats) int64 { return int64(s.Subscriptions) }},
	{"leasehold.renewal.rounds", "{round}", "Renewal rounds of the watchdog: one pipelined round trip each.",
		counter, func(s leasehold.Stats) int64 { return int64(s.RenewalRounds) }},
	{"leasehold.wakeups", "{wakeup}", "Wake-ups delivered to waiters.",
		counter, func(s leasehold.Stats) int64 { return int64(s.Wakeups) }},
}

// RegisterClient reports c.Stats at each metric collection, without a round
// trip, until unregister is called. Several Clients' counts add up. Only
// WithMeterProvider applies; on error nothing is registered.
func RegisterClient(c *leasehold.Client, opts ...Option) (unregister func() error, err error) {
	if c == nil {
		return nil, fmt.Errorf("leaseholdotel: RegisterClient: nil Client: %w", lease.ErrInvalid)
	}
	return register("RegisterClient", newConfig(opts).meters.Meter(scope), clientStats, c.Stats)
}

// register makes the instruments of stats on m and reports what snapshot
// returns at each collection, with attrs. op names the caller in errors.
func register[S any](op string, m metric.Meter, stats []stat[S], snapshot func() S, attrs ...attribute.KeyValue) (func() error, error) {
	insts := make([]metric.Int64Observable, len(stats))
	observables := make([]metric.Observable, len(stats))
	for i, st := range stats {
		desc, unit := metric.WithDescription(st.description), metric.WithUnit(st.unit)
		var err error
		switch st.kind {
		case counter:
			insts[i], err = m.Int64ObservableCounter(st.name, desc, unit)
		case upDown:
			insts[i], err = m.Int64ObservableUpDownCounter(st.name, desc, unit)
		default:
			insts[i], err = m.Int64ObservableGauge(st.name, desc, unit)
		}
		if err != nil {
			return nil, fmt.Errorf("leaseholdotel: %s: %w", op, err)
		}
		observables[i] = insts[i]
	}
	set := metric.WithAttributeSet(attribute.NewSet(attrs...))
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := snapshot()
		for i, st := range stats {
			o.ObserveInt64(insts[i], st.read(s), set)
		}
		return nil
	}, observables...)
	if err != nil {
		return nil, fmt.Errorf("leaseholdotel: %s: %w", op, err)
	}
	return reg.Unregister, nil
}
