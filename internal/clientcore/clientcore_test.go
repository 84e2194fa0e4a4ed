package clientcore_test

import (
	"testing"
	"time"
	"unsafe"

	"go.uber.org/goleak"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/clientcore"
	"github.com/leasehold/leasehold/internal/core"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Of converts the pointer: leasehold.Client must stay a struct of its one
// core.Client. This fails when a field is added to it.
func TestLayout(t *testing.T) {
	if c, l := unsafe.Sizeof(core.Client{}), unsafe.Sizeof(leasehold.Client{}); c != l {
		t.Errorf("leasehold.Client is %d bytes, core.Client %d: the Client must hold its state and nothing else", l, c)
	}
	var opt core.LockOption
	if o, l := unsafe.Sizeof(opt), unsafe.Sizeof(leasehold.LockOption{}); o != l {
		t.Errorf("leasehold.LockOption is %d bytes, core.LockOption %d: it must hold the option and nothing else", l, o)
	}
	if clientcore.Of(nil) != nil {
		t.Error("Of(nil) is not nil")
	}
}

// Lock reads the options a kind is given: one it takes applies, one it does
// not fails the lock, and a nil client leaves the defaults.
func TestLock(t *testing.T) {
	_, cfg := clientcore.Lock(nil, []leasehold.LockOption{leasehold.WithLeaseTime(time.Second)}, 0)
	if cfg.LeaseTime != time.Second || cfg.Err != nil {
		t.Errorf("WithLeaseTime(1s): lease time %v, err %v", cfg.LeaseTime, cfg.Err)
	}
	_, cfg = clientcore.Lock(nil, []leasehold.LockOption{leasehold.WithQueueTimeout(time.Second), {}}, core.TakesHoldAtLeast)
	if cfg.Err == nil {
		t.Error("WithQueueTimeout given to a kind that does not take it: no error")
	}
}
