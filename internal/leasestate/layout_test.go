package leasestate_test

import (
	"testing"
	"unsafe"

	"github.com/leasehold/leasehold/internal/leasestate"
	"github.com/leasehold/leasehold/lease"
)

// The engine hands a *leasestate.Lease out as a *lease.Lease, and a
// *leasestate.Future as a *lease.Future, by converting the pointer
// (core.AsLease): each public type must stay a struct of the one state
// field. This fails when a field is added to either.
func TestLayout(t *testing.T) {
	if a, l := unsafe.Sizeof(leasestate.Lease{}), unsafe.Sizeof(lease.Lease{}); a != l {
		t.Errorf("lease.Lease is %d bytes, leasestate.Lease %d: the Lease must hold its state and nothing else", l, a)
	}
	if a, l := unsafe.Sizeof(leasestate.Future[*lease.Lease]{}), unsafe.Sizeof(lease.Future{}); a != l {
		t.Errorf("lease.Future is %d bytes, leasestate.Future %d: the Future must hold its state and nothing else", l, a)
	}
}

// A Lease or Future no lock made reads as lost and fails, rather than
// panicking: users can write lease.Lease{} in a test of their own.
func TestZeroValues(t *testing.T) {
	var l lease.Lease
	select {
	case <-l.Lost():
	default:
		t.Error("a zero Lease's Lost is open")
	}
	if l.Err() == nil || l.Context().Err() == nil || l.Release(t.Context()) == nil || l.Name() != "" || l.Token() != 0 || l.HoldCount() != 0 {
		t.Errorf("a zero Lease: Err %v, Context %v, Name %q, Token %d, HoldCount %d; want it lost and empty",
			l.Err(), l.Context().Err(), l.Name(), l.Token(), l.HoldCount())
	}
	var f lease.Future
	<-f.Done()
	if ls, err := f.Result(); ls != nil || err == nil {
		t.Errorf("a zero Future's Result = %v, %v; want an error", ls, err)
	}
	f.Cancel()
}
