package leaseholdotel

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// An Option configures New and RegisterClient.
type Option interface {
	apply(*config)
}

type config struct {
	meters  metric.MeterProvider
	tracers trace.TracerProvider
	// name maps a lock name to the value of the metrics' lock name
	// attribute; nil leaves the attribute out.
	name func(string) string
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		o.apply(&c)
	}
	if c.meters == nil {
		c.meters = otel.GetMeterProvider()
	}
	if c.tracers == nil {
		c.tracers = otel.GetTracerProvider()
	}
	return c
}

// WithMeterProvider sets where the metrics go. Default: the global
// provider, otel.GetMeterProvider(); set it with otel.SetMeterProvider
// before calling New or RegisterClient.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.meters = mp })
}

// WithTracerProvider sets where the spans go; RegisterClient ignores it.
// Default: the global provider, otel.GetTracerProvider(); set it with
// otel.SetTracerProvider before calling New.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tracers = tp })
}

// WithLockName adds the lock name, as it is, to the metrics' attributes
// (leasehold.lock.name). Use it only when the names are few: every name
// becomes a time series of each metric, so one lock per order id grows
// them without bound. Spans carry the name whatever the options. Default:
// no name on metrics.
func WithLockName() Option {
	return WithNameMapper(func(name string) string { return name })
}

// WithNameMapper adds f(name) to the metrics' attributes as
// leasehold.lock.name: f maps the unbounded set of lock names to a bounded
// one, as "orders:1234" to "orders". An empty result leaves the attribute
// out. f runs on the goroutine of each event, so it must be quick. A nil f,
// like the default, puts no name on metrics.
func WithNameMapper(f func(name string) string) Option {
	return optionFunc(func(c *config) { c.name = f })
}
