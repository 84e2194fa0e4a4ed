package leaseholdotel

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/leasehold/leasehold/lease"
)

// scope names the meter and the tracer: the instrumentation library.
const scope = "github.com/leasehold/leasehold/otel"

// The attributes of the metrics and spans.
const (
	kindKey     = attribute.Key("leasehold.lock.kind")
	nameKey     = attribute.Key("leasehold.lock.name")
	ownerKey    = attribute.Key("leasehold.lock.owner")
	tokenKey    = attribute.Key("leasehold.lock.token")
	outcomeKey  = attribute.Key("leasehold.outcome")
	causeKey    = attribute.Key("leasehold.cause")
	attemptsKey = attribute.Key("leasehold.acquire.attempts")
	waitKey     = attribute.Key("leasehold.acquire.wait")
	heldKey     = attribute.Key("leasehold.hold.duration")
)

// The values of leasehold.outcome and leasehold.cause.
const (
	acquired    = "acquired"
	notAcquired = "not_acquired"
	timedOut    = "timed_out"
	cancelled   = "cancelled"
	closed      = "closed"
	failed      = "error"
	released    = "released"
	notHeld     = "not_held"
	lost        = "lost"
)

// Bucket boundaries, in seconds (or leases), given to the SDK as advice: a
// View the user configures overrides them. The SDK's default boundaries
// (0 to 10000) suit milliseconds, not seconds.
var (
	// An uncontended acquisition takes a round trip, well under a
	// millisecond; a contended one waits for a holder, up to the ctx
	// deadline.
	waitBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	// Holds last from a few milliseconds to hours (a leader).
	holdBuckets = []float64{0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600, 4 * 3600}
	// A renewal round is one pipelined round trip.
	roundBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}
	sizeBuckets  = []float64{1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 100000}
)

// New returns an Observer, for leasehold.WithObserver, that records lease
// events as metrics and spans; one may serve several Clients (its leader
// gauge then says whether any of them leads). It does not
// fail: a bad instrument goes to otel.Handle.
func New(opts ...Option) lease.Observer {
	c := newConfig(opts)
	m := c.meters.Meter(scope)
	o := &observer{tracer: c.tracers.Tracer(scope), name: c.name}
	var errs [7]error
	o.acquire, errs[0] = m.Float64Histogram("leasehold.acquire.duration",
		metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(waitBuckets...),
		metric.WithDescription("How long an Acquire or TryAcquire took, until it held the lock or gave up, by outcome."))
	o.hold, errs[1] = m.Float64Histogram("leasehold.hold.duration",
		metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(holdBuckets...),
		metric.WithDescription("How long a lease was held, until it was released or lost."))
	o.lost, errs[2] = m.Int64Counter("leasehold.leases.lost",
		metric.WithUnit("{lease}"),
		metric.WithDescription("Leases lost while held, by cause: lost (renewal failed or the lease ran out) or closed (the Client closed)."))
	o.round, errs[3] = m.Float64Histogram("leasehold.renewal.duration",
		metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(roundBuckets...),
		metric.WithDescription("How long a renewal round of the watchdog took: one pipelined round trip for every watchdog lease of a Client."))
	o.size, errs[4] = m.Int64Histogram("leasehold.renewal.size",
		metric.WithUnit("{lease}"), metric.WithExplicitBucketBoundaries(sizeBuckets...),
		metric.WithDescription("How many leases a renewal round renewed."))
	o.leaders = make(map[string]map[string]int)
	_, errs[6] = m.Int64ObservableGauge("leasehold.election.leader",
		metric.WithUnit("{leader}"), metric.WithInt64Callback(o.observeLeaders),
		metric.WithDescription("1 for each election this process leads through the observed Clients, 0 once it led and no longer does, by leasehold.lock.name."))
	if err := errors.Join(errs[:]...); err != nil {
		otel.Handle(err)
	}
	return o
}

type observer struct {
	tracer trace.Tracer
	name   func(string) string

	acquire, hold, round metric.Float64Histogram
	size                 metric.Int64Histogram
	lost                 metric.Int64Counter

	mu     sync.Mutex
	rounds [8]renewal // the last rounds recorded, a ring
	next   int        // where the next round goes in rounds
	// leaders holds, per election name this observer saw won, the
	// leases held of each leading owner (reentrant leases share one);
	// an empty map once no longer leading, so the gauge reads 0.
	leaders map[string]map[string]int
}

// renewal identifies a renewal round by what its events carry.
type renewal struct {
	took time.Duration
	size int
}

func (o *observer) Observe(e lease.Event) {
	if e.Lock == electionKind {
		o.leading(e)
	}
	switch e.Kind {
	case lease.Acquired, lease.Abandoned:
		o.acquired(e)
	case lease.Released:
		o.released(e)
	case lease.Lost:
		o.lostHold(e)
	case lease.Renewed:
		o.renewed(e)
	}
}

// acquired records an acquisition, held or not: a span from when the call
// began to now, a child of the caller's span, and its wait.
func (o *observer) acquired(e lease.Event) {
	end := time.Now()
	outcome := acquireOutcome(e)
	attrs := append(spanAttrs(e), outcomeKey.String(outcome),
		attemptsKey.Int(e.Attempts), waitKey.Float64(e.Waited.Seconds()))
	ctx, span := o.tracer.Start(orBackground(e.Context), "leasehold.acquire",
		trace.WithTimestamp(end.Add(-e.Waited)), trace.WithAttributes(attrs...))
	if e.Err != nil && outcome != notAcquired {
		// TryAcquire's "another owner holds it" is an answer, not a
		// failure: the span stays unset, as a 404 leaves an HTTP client's.
		span.RecordError(e.Err, trace.WithTimestamp(end))
		span.SetStatus(codes.Error, e.Err.Error())
	}
	span.End(trace.WithTimestamp(end))
	// ctx holds the span: an exemplar of the wait points at its trace.
	o.acquire.Record(ctx, e.Waited.Seconds(), o.measure(e, outcomeKey.String(outcome)))
}

// acquireOutcome is leasehold.outcome of an Acquired or Abandoned event.
func acquireOutcome(e lease.Event) string {
	switch {
	case e.Kind == lease.Acquired:
		return acquired
	case errors.Is(e.Err, lease.ErrNotReplicated):
		// Also ErrNotAcquired, but a fault of the deployment, not an
		// answer about the lock.
		return failed
	case errors.Is(e.Err, lease.ErrNotAcquired):
		return notAcquired
	case errors.Is(e.Err, context.DeadlineExceeded):
		return timedOut
	case errors.Is(e.Err, context.Canceled):
		return cancelled
	case errors.Is(e.Err, lease.ErrClosed):
		return closed
	}
	return failed
}

// released records a release: a span at the moment it was done, a child of
// the span in Release's ctx, and, when it succeeded, the time held. A
// release that failed is not a hold's end: the lease was lost before (its
// Lost event recorded the hold), or it is still held and will be released
// again.
func (o *observer) released(e lease.Event) {
	now := time.Now()
	outcome := released
	switch {
	case e.Err == nil:
	case errors.Is(e.Err, lease.ErrNotHeld):
		outcome = notHeld
	case errors.Is(e.Err, lease.ErrClosed):
		outcome = closed
	default:
		outcome = failed
	}
	attrs := append(spanAttrs(e), outcomeKey.String(outcome), heldKey.Float64(e.Held.Seconds()))
	ctx, span := o.tracer.Start(orBackground(e.Context), "leasehold.release",
		trace.WithTimestamp(now), trace.WithAttributes(attrs...))
	if e.Err != nil {
		span.RecordError(e.Err, trace.WithTimestamp(now))
		span.SetStatus(codes.Error, e.Err.Error())
	}
	span.End(trace.WithTimestamp(now))
	if e.Err == nil {
		o.hold.Record(ctx, e.Held.Seconds(), o.measure(e, outcomeKey.String(released)))
	}
}

// lostHold records a hold lost: its time held, and the loss.
func (o *observer) lostHold(e lease.Event) {
	cause := lost
	if errors.Is(e.Err, lease.ErrClosed) {
		cause = closed
	}
	ctx := orBackground(e.Context)
	o.hold.Record(ctx, e.Held.Seconds(), o.measure(e, outcomeKey.String(cause)))
	o.lost.Add(ctx, 1, o.measure(e, causeKey.String(cause)))
}

// renewed records a renewal round once, although the keeper reports it once
// for each lease it renewed, all with the round's Took and Round: the first
// event of a round records it, the others find it in the ring of recent
// rounds. A ring rather than the last round alone, so that several Clients
// sharing this Observer, whose rounds may interleave, are counted right.
// Two rounds taking the same time to the nanosecond over the same number of
// leases would count once: on a monotonic clock of nanoseconds, a rare loss.
// A round that renewed no lease (every renewal failed) reports no event and
// is not recorded.
func (o *observer) renewed(e lease.Event) {
	r := renewal{e.Took, e.Round}
	o.mu.Lock()
	for _, seen := range o.rounds {
		if seen == r {
			o.mu.Unlock()
			return
		}
	}
	o.rounds[o.next] = r
	o.next = (o.next + 1) % len(o.rounds)
	o.mu.Unlock()
	ctx := orBackground(e.Context)
	o.round.Record(ctx, e.Took.Seconds())
	o.size.Record(ctx, int64(e.Round))
}

// measure returns the attributes of a metric for e: its lock kind, the
// attributes given, and the lock name if the options map it.
func (o *observer) measure(e lease.Event, kv ...attribute.KeyValue) metric.MeasurementOption {
	attrs := make([]attribute.KeyValue, 0, len(kv)+2)
	attrs = append(attrs, kindKey.String(e.Lock))
	attrs = append(attrs, kv...)
	if o.name != nil {
		if n := o.name(e.Name); n != "" {
			attrs = append(attrs, nameKey.String(n))
		}
	}
	return metric.WithAttributes(attrs...)
}

// spanAttrs are the attributes every span of e carries. Spans are not
// aggregated, so they carry the lock name whatever the options.
func spanAttrs(e lease.Event) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs, kindKey.String(e.Lock), nameKey.String(e.Name))
	if e.Owner != "" {
		attrs = append(attrs, ownerKey.String(e.Owner))
	}
	if e.Token != 0 && e.Token <= math.MaxInt64 { // tokens stay far below 2^63
		attrs = append(attrs, tokenKey.Int64(int64(e.Token)))
	}
	return attrs
}

func orBackground(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}

// electionKind is the lock kind of an election's leases (lease.Event.Lock).
const electionKind = "election"

// leading follows an election's leadership from its events: a campaign
// won adds a lease of its owner; a release that succeeded takes one away;
// the loss of the hold ends every lease of its owner. A failed release
// changes nothing: the lease was lost before, or is still held.
func (o *observer) leading(e lease.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	owners := o.leaders[e.Name]
	switch {
	case e.Kind == lease.Acquired:
		if owners == nil {
			owners = make(map[string]int)
			o.leaders[e.Name] = owners
		}
		owners[e.Owner]++
	case owners == nil:
	case e.Kind == lease.Released && e.Err == nil:
		if owners[e.Owner]--; owners[e.Owner] <= 0 {
			delete(owners, e.Owner)
		}
	case e.Kind == lease.Lost:
		delete(owners, e.Owner)
	}
}

// observeLeaders reports leasehold.election.leader: per election name seen
// won, 1 while one of its owners holds, else 0.
func (o *observer) observeLeaders(_ context.Context, r metric.Int64Observer) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for name, owners := range o.leaders {
		v := int64(0)
		if len(owners) > 0 {
			v = 1
		}
		r.Observe(v, metric.WithAttributes(nameKey.String(name)))
	}
	return nil
}
