package core

import (
	"context"
	"unsafe"

	"github.com/leasehold/leasehold/internal/leasestate"
	"github.com/leasehold/leasehold/lease"
)

// NewFuture returns a Future for acquire and the function that runs it; the
// caller runs it exactly once, in a goroutine it waits for. A lease won
// after Cancel, or never taken by Result, is released within ReleaseTimeout.
func NewFuture(ctx context.Context, acquire func(context.Context) (*lease.Lease, error)) (*lease.Future, func()) {
	f, run := leasestate.NewFuture(ctx, acquire, func(l *lease.Lease) {
		ctx, cancel := context.WithTimeout(context.Background(), ReleaseTimeout)
		defer cancel()
		_ = l.Release(ctx) // best effort: a failed release lets the lease run out
	})
	return (*lease.Future)(unsafe.Pointer(f)), run
}

// AsLease is the Lease users hold for the state s. A lease.Lease is a
// struct whose only field is an leasestate.Lease, as a lease.Future's is an
// leasestate.Future: a pointer to the state is a pointer to the public value,
// which lets the engine make one without a constructor users could call
// (internal/leasestate's TestLayout pins it).
func AsLease(s *leasestate.Lease) *lease.Lease { return (*lease.Lease)(unsafe.Pointer(s)) }
