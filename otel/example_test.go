package leaseholdotel_test

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/redis/rueidis"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/leasehold/leasehold"
	leaseholdotel "github.com/leasehold/leasehold/otel"
	"github.com/leasehold/leasehold/rlock"
)

// A Client observed by the adapter, its counters registered, and one lease
// taken and released under the caller's span. The SDK here keeps what it
// records in memory, to print it; a service would give it a Prometheus or
// OTLP exporter and a batching span processor.
func Example() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())

	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}},
		leasehold.WithObserver(leaseholdotel.New(
			leaseholdotel.WithMeterProvider(mp),
			leaseholdotel.WithTracerProvider(tp))))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	unregister, err := leaseholdotel.RegisterClient(c, leaseholdotel.WithMeterProvider(mp))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer unregister()

	ctx, span := tp.Tracer("shop").Start(context.Background(), "checkout")
	l, err := rlock.New(c, "cart:1001").Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = l.Release(ctx)
	span.End()

	for _, s := range spans.Ended() {
		if s.Parent().SpanID() == span.SpanContext().SpanID() {
			fmt.Printf("span %s, in checkout\n", s.Name())
		} else {
			fmt.Printf("span %s\n", s.Name())
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		fmt.Println(err)
		return
	}
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					var attrs []string
					for _, kv := range p.Attributes.ToSlice() {
						attrs = append(attrs, fmt.Sprintf("%s=%s", kv.Key, kv.Value.String()))
					}
					lines = append(lines, fmt.Sprintf("%s{%s}: %d recorded", m.Name, strings.Join(attrs, " "), p.Count))
				}
			case metricdata.Sum[int64]:
				if m.Name == "leasehold.leases.held" {
					lines = append(lines, fmt.Sprintf("%s: %d", m.Name, d.DataPoints[0].Value))
				}
			}
		}
	}
	sort.Strings(lines)
	for _, line := range lines {
		fmt.Println(line)
	}
	// Output:
	// span leasehold.acquire, in checkout
	// span leasehold.release, in checkout
	// span checkout
	// leasehold.acquire.duration{leasehold.lock.kind=rlock leasehold.outcome=acquired}: 1 recorded
	// leasehold.hold.duration{leasehold.lock.kind=rlock leasehold.outcome=released}: 1 recorded
	// leasehold.leases.held: 0
}

// Lock names made per order map to one attribute value per family, so the
// metrics keep one series per family however many orders there are.
func ExampleWithNameMapper() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	family := func(name string) string { // "orders:1001" -> "orders"
		prefix, _, _ := strings.Cut(name, ":")
		return prefix
	}
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}},
		leasehold.WithObserver(leaseholdotel.New(
			leaseholdotel.WithMeterProvider(mp),
			leaseholdotel.WithNameMapper(family))))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	for _, name := range []string{"orders:1001", "orders:1002", "orders:1003"} {
		l, err := rlock.New(c, name).Acquire(context.Background())
		if err != nil {
			fmt.Println(err)
			return
		}
		_ = l.Release(context.Background())
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name != "leasehold.acquire.duration" {
			continue
		}
		for _, p := range m.Data.(metricdata.Histogram[float64]).DataPoints {
			name, _ := p.Attributes.Value("leasehold.lock.name")
			fmt.Printf("%s{leasehold.lock.name=%s}: %d recorded\n", m.Name, name.String(), p.Count)
		}
	}
	// Output:
	// leasehold.acquire.duration{leasehold.lock.name=orders}: 3 recorded
}
