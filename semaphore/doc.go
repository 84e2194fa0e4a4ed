// Package semaphore provides a leased counting semaphore on Redis: at most N
// holders at a time across every process, laid out as Redisson's
// RPermitExpirableSemaphore so that Go and Java services share one.
//
//	s := semaphore.New(c, "partner-api")
//	s.TrySetPermits(ctx, 8)        // once: the total, if it was never set
//	l, err := s.Acquire(ctx)       // waits for one of the 8 permits
//	if err != nil { return err }
//	defer l.Release(context.Background())
//
// Each permit is a lease like any lock's: renewed by the watchdog while its
// holder lives, Lost when it is lost, given back by Release; a dead holder's
// permits come back once their lease runs out. Weighted(n) hands out leases of
// n permits, as golang.org/x/sync/semaphore's Weighted does in one process,
// and larger requests go first. A semaphore is not reentrant, and Token is 0:
// with several holders at once, no order of tokens could fence. A semaphore
// never set, or of total 0, is shut: Acquire waits. A failed acquisition
// holds nothing, and bad input changes nothing in Redis.
//
// Layout, clocks, waiting and order, bad input:
// https://github.com/leasehold/leasehold/blob/main/docs/semaphore.md
package semaphore
