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

// WithLockName puts the lock name on metrics (leasehold.lock.name), for a
// few well-known names: each name makes time series of its own. Default: no
// name on metrics.
func WithLockName() Option {
	return WithNameMapper(func(name string) string { return name })
}

// WithNameMapper puts f(name) on metrics as leasehold.lock.name, mapping
// unbounded names to few ("orders:1234" to "orders"); "" leaves it out. f
// must be quick. Default: no name on metrics.
func WithNameMapper(f func(name string) string) Option {
	return optionFunc(func(c *config) { c.name = f })
}
