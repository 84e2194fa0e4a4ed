package quorum

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/leasehold/leasehold/internal/engine"
	"github.com/leasehold/leasehold/lease"
)

// fence writes token back to the member leases held, each under NodeTimeout,
// when every member can raise its fencing counter (every lock of this module
// that draws tokens can: rlock, fairqueue, rw). It fails, wrapping lease.ErrNotAcquired,
// unless needed members confirm: the counters of a quorum of nodes are then
// at least token, and every later quorum meets one of them, draws a token
// above it there and so hands out a higher token (a quorum max-register).
func (q *lock) fence(ctx context.Context, leases []*lease.Lease, token uint64) error {
	if !q.raise {
		return nil
	}
	errs := make([]error, len(leases))
	var wg sync.WaitGroup
	for i, l := range leases {
		// A member that drew token (or more) has its counter there already,
		// and counters only rise. While the counters agree (every holder
		// reached every node), no write is needed at all.
		if l == nil || l.Token() >= token {
			continue
		}
		wg.Go(func() {
			rctx, cancel := context.WithTimeout(ctx, q.cfg.NodeTimeout)
			defer cancel()
			_, _, errs[i] = engine.RaiseToken(rctx, q.members[i], token)
		})
	}
	wg.Wait()
	raised := 0
	var b strings.Builder
	for i, l := range leases {
		switch {
		case l == nil:
		case errs[i] != nil:
			fmt.Fprintf(&b, "; member %d: %v", i, errs[i])
		default:
			raised++
		}
	}
	if raised < q.needed {
		return fmt.Errorf("%w: fencing token %d written back to %d members, %d needed%s",
			lease.ErrNotAcquired, token, raised, q.needed, b.String())
	}
	return nil
}
