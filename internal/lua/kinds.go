package lua

// A Kind is one kind of lock, a row of Kinds: what the engine, the
// observer's events, otel, the operator command and the fault suite know of
// it. A new kind is a row here (see docs/architecture.md, "Adding a kind").
type Kind struct {
	// Name is the kind in observed events (lease.Event.Lock) and otel's
	// attributes.
	Name string
	// Package is the package users make it with.
	Package string
	// Reentrant: an Acquire under the context of one of its leases, on the
	// same Client and name, re-enters that lease's hold; otherwise it takes
	// a hold of its own (a semaphore's permits).
	Reentrant bool
	// Shape is how Inspect reads its keys.
	Shape Shape
	// AllUnlatched: its release of every hold reads no unlock latch (a
	// repeat finds the owner gone and says so), so it is sent with no
	// request id (see Protocol.Release).
	AllUnlatched bool
}

// The kinds.
var (
	KindRLock     = &Kind{Name: "rlock", Package: "rlock", Reentrant: true, Shape: ShapeRLock, AllUnlatched: true}
	KindFair      = &Kind{Name: "fair", Package: "fairqueue", Reentrant: true, Shape: ShapeFair}
	KindRWRead    = &Kind{Name: "rw-read", Package: "rw", Reentrant: true, Shape: ShapeRW}
	KindRWWrite   = &Kind{Name: "rw-write", Package: "rw", Reentrant: true, Shape: ShapeRW}
	KindSemaphore = &Kind{Name: "semaphore", Package: "semaphore", Shape: ShapeSemaphore}
	KindElection  = &Kind{Name: "election", Package: "election", Reentrant: true, Shape: ShapeElection, AllUnlatched: true}
)

// Kinds are the lock kinds, in the order the documentation lists them.
var Kinds = []*Kind{KindRLock, KindFair, KindRWRead, KindRWWrite, KindSemaphore, KindElection}
