// Package fairqueue provides a fair reentrant lock on Redis: waiters get the
// lock in the order they asked for it, across every Client and process, so no
// waiter starves. It is laid out as Redisson's RFairLock.
//
//	l, err := fairqueue.New(c, "orders").Acquire(ctx)
//	if err != nil { return err }
//	defer l.Release(context.Background())
//
// The Lease is rlock's: a watchdog or fixed lease, Lost, Context, a fencing
// Token, reentrancy through the context. A waiter joins the queue at its first
// attempt, and a free lock goes to the head of the queue alone: a newcomer let
// in at a release would starve the waiters, so TryAcquire fails while anyone
// waits. A waiter whose ctx ends leaves the queue at once; one whose process
// dies loses its place after the queue timeout (leasehold.WithQueueTimeout,
// default 5s). Live waiters sleep until told to try, while their Client keeps
// their places: one script per lock every third of the queue timeout, however
// many wait.
//
// Fairness, timeouts, liveness and Redisson interop in full:
// https://github.com/leasehold/leasehold/blob/main/docs/fairqueue.md
package fairqueue
