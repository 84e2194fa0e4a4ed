package partition

import (
	"fmt"

	"github.com/leasehold/leasehold/lease"
)

// An Option configures a Group in New.
type Option interface{ apply(*options) }

type options struct {
	capacity int   // 0: no limit
	err      error // the first invalid option, returned by Run
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithCapacity caps the partitions this member owns at k: a member whose
// share of the partitions (n over the members) is above k owns k, and the
// others share the rest evenly; partitions beyond every member's capacity
// run nowhere until a member joins. k below 1 fails Run with
// lease.ErrInvalid. Default: no limit.
func WithCapacity(k int) Option {
	return optionFunc(func(o *options) {
		if k < 1 && o.err == nil {
			o.err = fmt.Errorf("%w: WithCapacity(%d): a capacity of at least 1", lease.ErrInvalid, k)
		}
		o.capacity = max(k, 0)
	})
}
