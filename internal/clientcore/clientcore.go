// Package clientcore reads the root package's Client and LockOptions for
// the lock kinds: each is a struct whose only field is its state in core
// (a core.Client, a core.LockOption), so a pointer to the one points at the
// other. Neither package could export the step without users seeing it, and
// a hook filled at init would hide it.
package clientcore

import (
	"unsafe"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/core"
)

// Of is c's state; nil for a nil c.
func Of(c *leasehold.Client) *core.Client { return (*core.Client)(unsafe.Pointer(c)) }

// Lock returns c's state and the configuration of one lock of a kind that
// takes, beyond the options every kind takes, those in takes.
func Lock(c *leasehold.Client, opts []leasehold.LockOption, takes core.Takes) (*core.Client, core.LockConfig) {
	cc := Of(c)
	return cc, cc.LockConfig(unsafe.Slice((*core.LockOption)(unsafe.Pointer(unsafe.SliceData(opts))), len(opts)), takes)
}
