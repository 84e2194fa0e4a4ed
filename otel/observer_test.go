package leaseholdotel_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/lease"
	leaseholdotel "github.com/leasehold/leasehold/otel"
	"github.com/leasehold/leasehold/rlock"
)

// rig is one test's OpenTelemetry SDK, with in-memory readers: a manual
// metric reader and a span recorder.
type rig struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	mp     *sdkmetric.MeterProvider
	tp     *sdktrace.TracerProvider
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	r.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	t.Cleanup(func() {
		_ = r.mp.Shutdown(context.Background())
		_ = r.tp.Shutdown(context.Background())
	})
	return r
}

// providers are the options that point the adapter at the rig.
func (r *rig) providers(opts ...leaseholdotel.Option) []leaseholdotel.Option {
	return append([]leaseholdotel.Option{leaseholdotel.WithMeterProvider(r.mp), leaseholdotel.WithTracerProvider(r.tp)}, opts...)
}

// open returns a Client observed by the adapter, closed when the test ends.
func (r *rig) open(t *testing.T, o lease.Observer, opts ...leasehold.Option) *leasehold.Client {
	t.Helper()
	if o != nil {
		opts = append(opts, leasehold.WithObserver(o))
	}
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{redisAddr}}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// metrics collects every metric, by name.
func (r *rig) metrics(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// ended returns the spans ended so far, named name.
func (r *rig) ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// hist returns the count and sum of the histogram point of metric name
// whose attributes are exactly kv; ok is false if there is none.
func hist(ms map[string]metricdata.Metrics, name string, kv ...attribute.KeyValue) (count uint64, sum float64, ok bool) {
	want := attribute.NewSet(kv...)
	switch d := ms[name].Data.(type) {
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			if p.Attributes.Equals(&want) {
				return p.Count, p.Sum, true
			}
		}
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			if p.Attributes.Equals(&want) {
				return p.Count, float64(p.Sum), true
			}
		}
	}
	return 0, 0, false
}

// sum returns the value of the sum point of metric name whose attributes
// are exactly kv.
func sum(ms map[string]metricdata.Metrics, name string, kv ...attribute.KeyValue) (int64, bool) {
	want := attribute.NewSet(kv...)
	if d, ok := ms[name].Data.(metricdata.Sum[int64]); ok {
		for _, p := range d.DataPoints {
			if p.Attributes.Equals(&want) {
				return p.Value, true
			}
		}
	}
	return 0, false
}

// attrs returns a span's attributes by key.
func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

// eventually polls cond every few ms until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var (
	kind    = attribute.Key("leasehold.lock.kind")
	outcome = attribute.Key("leasehold.outcome")
	cause   = attribute.Key("leasehold.cause")
	lockKey = attribute.Key("leasehold.lock.name")
)

// TestAcquireRelease follows one lease through: an acquisition that waits
// for another owner's release, and its release, each a span under the
// caller's span, with the wait and the hold in the histograms.
func TestAcquireRelease(t *testing.T) {
	r := newRig(t)
	c := r.open(t, leaseholdotel.New(r.providers()...))
	other := r.open(t, nil)
	ctx := context.Background()

	first, err := rlock.New(other, "orders:42").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ctx, parent := r.tp.Tracer("test").Start(ctx, "handle order 42")
	start := time.Now()
	type result struct {
		l   *lease.Lease
		err error
	}
	done := make(chan result, 1)
	go func() {
		l, err := rlock.New(c, "orders:42").Acquire(ctx)
		done <- result{l, err}
	}()
	eventually(t, 10*time.Second, "the second Acquire waits", func() bool { return c.Stats().Waiters == 1 })
	time.Sleep(50 * time.Millisecond) // a wait long enough to tell from a round trip
	releasedAt := time.Now()
	if err := first.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	l := res.l
	time.Sleep(20 * time.Millisecond)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	parent.End()

	acq := r.ended("leasehold.acquire")
	rel := r.ended("leasehold.release")
	if len(acq) != 1 || len(rel) != 1 {
		t.Fatalf("%d acquire and %d release spans, want 1 each", len(acq), len(rel))
	}
	a := attrs(acq[0])
	waited := acq[0].EndTime().Sub(acq[0].StartTime())
	for _, check := range []struct {
		what string
		ok   bool
	}{
		{"acquire is a child of the caller's span", acq[0].Parent().SpanID() == parent.SpanContext().SpanID()},
		{"release is a child of the caller's span", rel[0].Parent().SpanID() == parent.SpanContext().SpanID()},
		{"acquire starts when Acquire was called", !acq[0].StartTime().Before(start) && acq[0].StartTime().Before(releasedAt)},
		{"acquire lasts the wait", waited >= 50*time.Millisecond && a["leasehold.acquire.wait"].AsFloat64() == waited.Seconds()},
		{"acquire kind", a["leasehold.lock.kind"].AsString() == "rlock"},
		{"acquire name", a["leasehold.lock.name"].AsString() == "orders:42"},
		{"acquire owner", a["leasehold.lock.owner"].AsString() == l.Owner()},
		{"acquire token", a["leasehold.lock.token"].AsInt64() == int64(l.Token())},
		{"acquire outcome", a["leasehold.outcome"].AsString() == "acquired"},
		{"acquire attempts", a["leasehold.acquire.attempts"].AsInt64() >= 2},
		{"acquire status", acq[0].Status().Code == codes.Unset},
		{"release token", attrs(rel[0])["leasehold.lock.token"].AsInt64() == int64(l.Token())},
		{"release outcome", attrs(rel[0])["leasehold.outcome"].AsString() == "released"},
		{"release held", attrs(rel[0])["leasehold.hold.duration"].AsFloat64() >= 0.02},
		{"release status", rel[0].Status().Code == codes.Unset},
	} {
		if !check.ok {
			t.Errorf("%s: no. acquire %v, release %v", check.what, acq[0].Attributes(), rel[0].Attributes())
		}
	}

	ms := r.metrics(t)
	if n, s, _ := hist(ms, "leasehold.acquire.duration", kind.String("rlock"), outcome.String("acquired")); n != 1 || s != waited.Seconds() {
		t.Errorf("acquire.duration{rlock,acquired}: count %d sum %v, want 1, %v", n, s, waited.Seconds())
	}
	if n, s, _ := hist(ms, "leasehold.hold.duration", kind.String("rlock"), outcome.String("released")); n != 1 || s < 0.02 {
		t.Errorf("hold.duration{rlock,released}: count %d sum %v, want 1, >= 0.02", n, s)
	}
	if testing.Verbose() {
		t.Logf("spans:\n%s", dumpSpans(r.spans.Ended()))
		t.Logf("metrics:\n%s", dumpMetrics(ms))
	}
}

// TestOutcomes pins down leasehold.outcome and the span status of each way
// an acquisition can end.
func TestOutcomes(t *testing.T) {
	r := newRig(t)
	obs := leaseholdotel.New(r.providers()...)
	c := r.open(t, obs)
	holder := r.open(t, nil)
	held, err := rlock.New(holder, "busy").Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(context.Background())

	for _, tc := range []struct {
		outcome string
		status  codes.Code
		acquire func(t *testing.T) error
		is      error
	}{
		{"acquired", codes.Unset, func(t *testing.T) error {
			l, err := rlock.New(c, "free").TryAcquire(context.Background())
			if err == nil {
				l.Release(context.Background())
			}
			return err
		}, nil},
		{"not_acquired", codes.Unset, func(t *testing.T) error {
			_, err := rlock.New(c, "busy").TryAcquire(context.Background())
			return err
		}, lease.ErrNotAcquired},
		{"timed_out", codes.Error, func(t *testing.T) error {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			_, err := rlock.New(c, "busy").Acquire(ctx)
			return err
		}, context.DeadlineExceeded},
		{"cancelled", codes.Error, func(t *testing.T) error {
			f := rlock.New(c, "busy").AcquireAsync(context.Background())
			eventually(t, 10*time.Second, "the Future waits", func() bool { return c.Stats().Waiters == 1 })
			f.Cancel()
			_, err := f.Result()
			return err
		}, context.Canceled},
		{"error", codes.Error, func(t *testing.T) error {
			_, err := rlock.New(c, "").Acquire(context.Background())
			return err
		}, lease.ErrInvalid},
		{"closed", codes.Error, func(t *testing.T) error {
			closing := r.open(t, obs)
			f := rlock.New(closing, "busy").AcquireAsync(context.Background())
			eventually(t, 10*time.Second, "the Future waits", func() bool { return closing.Stats().Waiters == 1 })
			closing.Close()
			_, err := f.Result()
			return err
		}, lease.ErrClosed},
	} {
		t.Run(tc.outcome, func(t *testing.T) {
			r.spans.Reset()
			if err := tc.acquire(t); !errors.Is(err, tc.is) {
				t.Fatalf("got %v, want %v", err, tc.is)
			}
			spans := r.ended("leasehold.acquire")
			if len(spans) != 1 {
				t.Fatalf("%d acquire spans, want 1", len(spans))
			}
			s := spans[0]
			if got := attrs(s)["leasehold.outcome"].AsString(); got != tc.outcome {
				t.Errorf("outcome %q, want %q", got, tc.outcome)
			}
			if s.Status().Code != tc.status {
				t.Errorf("status %v, want %v", s.Status(), tc.status)
			}
			// An error is recorded exactly when the status says so.
			recorded := slices.ContainsFunc(s.Events(), func(e sdktrace.Event) bool { return e.Name == "exception" })
			if recorded != (tc.status == codes.Error) {
				t.Errorf("error recorded: %v, status %v", recorded, s.Status())
			}
			if _, ok := attrs(s)["leasehold.lock.token"]; ok != (tc.outcome == "acquired") {
				t.Errorf("token attribute present: %v", ok)
			}
			if n, _, _ := hist(r.metrics(t), "leasehold.acquire.duration", kind.String("rlock"), outcome.String(tc.outcome)); n != 1 {
				t.Errorf("acquire.duration{rlock,%s}: count %d, want 1", tc.outcome, n)
			}
		})
	}
}

// TestLost: a lease lost while held (its key deleted under it) counts as
// lost, with its hold time; the release that follows fails, is marked so,
// and adds no hold time.
func TestLost(t *testing.T) {
	r := newRig(t)
	c := r.open(t, leaseholdotel.New(r.providers()...), leasehold.WithWatchdog(300*time.Millisecond))
	ctx := context.Background()
	l, err := rlock.New(c, "lost-me").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redisAddr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if err := rc.Do(ctx, rc.B().Del().Key("lost-me").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the lease was not lost")
	}
	if err := l.Release(ctx); !errors.Is(err, lease.ErrNotHeld) {
		t.Fatalf("Release: %v, want ErrNotHeld", err)
	}
	rel := r.ended("leasehold.release")
	if len(rel) != 1 || attrs(rel[0])["leasehold.outcome"].AsString() != "not_held" || rel[0].Status().Code != codes.Error {
		t.Fatalf("release spans %v", rel)
	}
	ms := r.metrics(t)
	if n, ok := sum(ms, "leasehold.leases.lost", kind.String("rlock"), cause.String("lost")); n != 1 || !ok {
		t.Errorf("leases.lost{rlock,lost} = %d, want 1", n)
	}
	if n, _, _ := hist(ms, "leasehold.hold.duration", kind.String("rlock"), outcome.String("lost")); n != 1 {
		t.Errorf("hold.duration{rlock,lost}: count %d, want 1", n)
	}
	if _, _, ok := hist(ms, "leasehold.hold.duration", kind.String("rlock"), outcome.String("released")); ok {
		t.Error("a failed release recorded a hold time")
	}
}

// TestRenewalRounds: the keeper reports a round once per lease it renewed;
// the adapter records each round once, with its size. A Client closed
// while holding reports its leases lost with cause closed.
func TestRenewalRounds(t *testing.T) {
	r := newRig(t)
	obs := leaseholdotel.New(r.providers()...)
	type round struct {
		took time.Duration
		size int
	}
	var (
		mu     sync.Mutex
		events int
		rounds = map[round]bool{}
	)
	tee := lease.ObserverFunc(func(e lease.Event) {
		obs.Observe(e)
		if e.Kind == lease.Renewed {
			mu.Lock()
			events++
			rounds[round{e.Took, e.Round}] = true
			mu.Unlock()
		}
	})
	c := r.open(t, tee, leasehold.WithWatchdog(300*time.Millisecond))
	const leases = 3
	for i := range leases {
		if _, err := rlock.New(c, fmt.Sprintf("renewed:%d", i)).Acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "5 renewal rounds", func() bool { return c.Stats().RenewalRounds >= 5 })
	c.Close() // the keeper has stopped: no round is half reported

	ms := r.metrics(t)
	if testing.Verbose() {
		t.Logf("metrics:\n%s", dumpMetrics(ms))
	}
	n, took, _ := hist(ms, "leasehold.renewal.duration")
	m, size, _ := hist(ms, "leasehold.renewal.size")
	mu.Lock()
	defer mu.Unlock()
	if n != uint64(len(rounds)) || m != n || n < 3 {
		t.Errorf("%d durations and %d sizes recorded for %d rounds (%d events), want one of each per round", n, m, len(rounds), events)
	}
	if int(size) != events {
		t.Errorf("sizes add up to %v, want the %d leases renewed", size, events)
	}
	if took <= 0 {
		t.Errorf("rounds took %v s in all", took)
	}
	if v, _ := sum(ms, "leasehold.leases.lost", kind.String("rlock"), cause.String("closed")); v != leases {
		t.Errorf("leases.lost{rlock,closed} = %d, want %d", v, leases)
	}
	if v, _, _ := hist(ms, "leasehold.hold.duration", kind.String("rlock"), outcome.String("closed")); v != leases {
		t.Errorf("hold.duration{rlock,closed}: count %d, want %d", v, leases)
	}
}

// TestRenewalRoundsInterleaved: two Clients sharing one Observer report
// their rounds interleaved; each round is still recorded once.
func TestRenewalRoundsInterleaved(t *testing.T) {
	r := newRig(t)
	obs := leaseholdotel.New(r.providers()...)
	a := lease.Event{Kind: lease.Renewed, Took: 1200 * time.Microsecond, Round: 2}
	b := lease.Event{Kind: lease.Renewed, Took: 900 * time.Microsecond, Round: 3}
	for _, e := range []lease.Event{a, b, a, b, b} {
		obs.Observe(e)
	}
	ms := r.metrics(t)
	if n, s, _ := hist(ms, "leasehold.renewal.size"); n != 2 || s != 5 {
		t.Errorf("renewal.size: count %d sum %v, want 2 rounds of 5 leases", n, s)
	}
	if n, s, _ := hist(ms, "leasehold.renewal.duration"); n != 2 || s != (2100*time.Microsecond).Seconds() {
		t.Errorf("renewal.duration: count %d sum %v", n, s)
	}
}

// TestLockName: metrics carry no lock name by default (their cardinality
// stays bounded), the name with WithLockName, what the mapper makes of it
// with WithNameMapper; spans always carry it.
func TestLockName(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []leaseholdotel.Option
		want string // "" for no attribute
	}{
		{"default", nil, ""},
		{"WithLockName", []leaseholdotel.Option{leaseholdotel.WithLockName()}, "orders:7"},
		{"WithNameMapper", []leaseholdotel.Option{leaseholdotel.WithNameMapper(func(n string) string {
			prefix, _, _ := strings.Cut(n, ":")
			return prefix
		})}, "orders"},
		{"WithNameMapper empty", []leaseholdotel.Option{leaseholdotel.WithNameMapper(func(string) string { return "" })}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			obs := leaseholdotel.New(r.providers(tc.opts...)...)
			for _, e := range []lease.Event{
				{Kind: lease.Acquired, Lock: "rlock", Name: "orders:7", Waited: time.Millisecond},
				{Kind: lease.Released, Lock: "rlock", Name: "orders:7", Held: time.Second},
				{Kind: lease.Lost, Lock: "rlock", Name: "orders:7", Held: time.Second, Err: lease.ErrLost},
			} {
				obs.Observe(e)
			}
			for name, m := range r.metrics(t) {
				d, ok := m.Data.(metricdata.Histogram[float64])
				var sets []attribute.Set
				if ok {
					for _, p := range d.DataPoints {
						sets = append(sets, p.Attributes)
					}
				} else if d, ok := m.Data.(metricdata.Sum[int64]); ok {
					for _, p := range d.DataPoints {
						sets = append(sets, p.Attributes)
					}
				}
				if len(sets) == 0 {
					t.Errorf("%s: no points", name)
				}
				for _, set := range sets {
					got, _ := set.Value(lockKey)
					if got.AsString() != tc.want {
						t.Errorf("%s: lock name %q, want %q", name, got.AsString(), tc.want)
					}
				}
			}
			for _, s := range r.spans.Ended() {
				if got := attrs(s)["leasehold.lock.name"].AsString(); got != "orders:7" {
					t.Errorf("span %s: lock name %q", s.Name(), got)
				}
			}
		})
	}
}

// TestGlobalProviders: without options the adapter uses the global
// providers.
func TestGlobalProviders(t *testing.T) {
	r := newRig(t)
	otel.SetMeterProvider(r.mp)
	otel.SetTracerProvider(r.tp)
	t.Cleanup(func() {
		otel.SetMeterProvider(metricnoop.NewMeterProvider())
		otel.SetTracerProvider(tracenoop.NewTracerProvider())
	})
	obs := leaseholdotel.New()
	obs.Observe(lease.Event{Kind: lease.Acquired, Lock: "fair", Name: "g", Waited: time.Millisecond})
	if n, _, _ := hist(r.metrics(t), "leasehold.acquire.duration", kind.String("fair"), outcome.String("acquired")); n != 1 {
		t.Errorf("acquire.duration on the global meter provider: count %d", n)
	}
	if len(r.ended("leasehold.acquire")) != 1 {
		t.Error("no span on the global tracer provider")
	}
}

// dumpSpans prints spans one a line, indented under their parents, for a
// verbose run.
func dumpSpans(spans []sdktrace.ReadOnlySpan) string {
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	depth := func(s sdktrace.ReadOnlySpan) int {
		d := 0
		for p, ok := byID[s.Parent().SpanID()]; ok; p, ok = byID[p.Parent().SpanID()] {
			d++
		}
		return d
	}
	sorted := slices.Clone(spans)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].StartTime().Before(sorted[j].StartTime()) })
	var b strings.Builder
	for _, s := range sorted {
		fmt.Fprintf(&b, "%s%s  span=%s parent=%s  %v", strings.Repeat("  ", depth(s)), s.Name(),
			s.SpanContext().SpanID(), s.Parent().SpanID(), s.EndTime().Sub(s.StartTime()).Round(time.Microsecond))
		for _, kv := range s.Attributes() {
			fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.String())
		}
		if s.Status().Code != codes.Unset {
			fmt.Fprintf(&b, " status=%s(%q)", s.Status().Code, s.Status().Description)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// dumpMetrics prints each metric's points, one a line, for a verbose run.
func dumpMetrics(ms map[string]metricdata.Metrics) string {
	names := make([]string, 0, len(ms))
	for n := range ms {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	set := func(s attribute.Set) string {
		var parts []string
		for _, kv := range s.ToSlice() {
			parts = append(parts, fmt.Sprintf("%s=%s", kv.Key, kv.Value.String()))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	for _, n := range names {
		m := ms[n]
		switch d := m.Data.(type) {
		case metricdata.Histogram[float64]:
			for _, p := range d.DataPoints {
				fmt.Fprintf(&b, "%s%s [%s] histogram count=%d sum=%.6f\n", n, set(p.Attributes), m.Unit, p.Count, p.Sum)
			}
		case metricdata.Histogram[int64]:
			for _, p := range d.DataPoints {
				fmt.Fprintf(&b, "%s%s [%s] histogram count=%d sum=%d\n", n, set(p.Attributes), m.Unit, p.Count, p.Sum)
			}
		case metricdata.Sum[int64]:
			kind := "counter"
			if !d.IsMonotonic {
				kind = "up-down counter"
			}
			for _, p := range d.DataPoints {
				fmt.Fprintf(&b, "%s%s [%s] %s %d\n", n, set(p.Attributes), m.Unit, kind, p.Value)
			}
		}
	}
	return b.String()
}
