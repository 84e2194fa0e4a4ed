package lua

import (
	"context"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/script"
)

// FairTimes are the waiting times the fair lock's scripts take.
type FairTimes struct {
	// Queue is how long a waiter keeps its place after an attempt.
	Queue time.Duration
	// Refresh is the longest a waiter sleeps between attempts; well under Queue.
	Refresh time.Duration
}

// AcquireFair runs fair_acquire: take or re-enter the fair lock name for
// owner with the given lease. With join set, a failed attempt puts owner at
// the tail of the queue or refreshes its place there (Acquire); without, it
// leaves the queue alone (TryAcquire). A failed attempt's Grant.Wait is how
// long to sleep before the next (with join: at most ft.Refresh).
func AcquireFair(ctx context.Context, c rueidis.Client, name, owner string, lease time.Duration, ft FairTimes, join bool) (Grant, error) {
	j := "0"
	if join {
		j = "1"
	}
	return ParseGrant(Exec(ctx, c, script.FairAcquire,
		[]string{name, script.FairQueueKey(name), script.FairTimeoutKey(name), script.TokenKey(name), script.LockChannel(name)},
		[]string{Ms(lease), owner, Ms(ft.Queue), Ms(ft.Refresh), j, script.UnlockMessage}))
}

// AbandonFair runs fair_abandon: owner leaves the queue of the fair lock
// name, and the new head is told if it has to act. It reports whether owner
// had a place.
func AbandonFair(ctx context.Context, c rueidis.Client, name, owner string, ft FairTimes) (bool, error) {
	n, err := Exec(ctx, c, script.FairAbandon,
		[]string{name, script.FairQueueKey(name), script.FairTimeoutKey(name), script.LockChannel(name)},
		[]string{owner, Ms(ft.Refresh), script.UnlockMessage}).AsInt64()
	return n > 0, err
}

// ReleaseFair runs fair_release for one hold of owner, or every hold when
// all is set; on full release the head of the queue is told. requestID names
// the release so that a retry is answered from the latch; latch is how long
// that answer is kept. It returns Freed, StillHeld or NotHeld.
func ReleaseFair(ctx context.Context, c rueidis.Client, name, owner, requestID string, lease, latch time.Duration, ft FairTimes, all bool) (int64, error) {
	every := "0"
	if all {
		every = "1"
	}
	return Exec(ctx, c, script.FairRelease,
		[]string{name, script.FairQueueKey(name), script.FairTimeoutKey(name), script.LockChannel(name), script.UnlockLatchKey(name, requestID)},
		[]string{script.UnlockMessage, Ms(lease), owner, Ms(latch), every, Ms(ft.Refresh)}).AsInt64()
}

// ForceReleaseFair runs fair_force_release: it deletes the fair lock name
// whoever holds it, tells the head of the queue, and reports whether there
// was a lock to delete.
func ForceReleaseFair(ctx context.Context, c rueidis.Client, name string) (bool, error) {
	n, err := Exec(ctx, c, script.FairForceRelease,
		[]string{name, script.FairQueueKey(name), script.FairTimeoutKey(name), script.LockChannel(name)},
		[]string{script.UnlockMessage}).AsInt64()
	return n == 1, err
}
