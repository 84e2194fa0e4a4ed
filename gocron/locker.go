package leaseholdgocron

import (
	"context"
	"sync"

	"github.com/go-co-op/gocron/v2"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

// NewLocker returns a gocron.Locker on c. For each run of a job, Lock makes
// one attempt on the rlock named after the job (gocron's key: name jobs with
// gocron.WithName), with opts; a run that finds it taken is skipped, Lock's
// error wrapping lease.ErrNotAcquired. Unlock releases it. Give it
// leasehold.WithHoldAtLeast(d), d above the splay between the replicas' runs
// of a tick and below the interval less that splay, or a run shorter than the
// splay runs again on the replicas behind (docs/cron.md). RunContext gives a
// task the run's context, which ends if its lock is lost.
func NewLocker(c *leasehold.Client, opts ...leasehold.LockOption) gocron.Locker {
	return &locker{c: c, opts: opts}
}

type locker struct {
	c    *leasehold.Client
	opts []leasehold.LockOption
}

// Lock makes one attempt on the rlock key. ctx is the job's context, which
// gocron also hands the job's task: the run is found by it (RunContext).
func (l *locker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	ls, err := rlock.New(l.c, key, l.opts...).TryAcquire(ctx)
	if err != nil {
		return nil, err
	}
	return start(ctx, ls), nil
}

// run is one run of a job under its lease: its context for the task, which
// ends when the lease is lost or the job's context ends.
type run struct {
	job    context.Context // gocron's job context, the key in runs
	ls     *lease.Lease
	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   func() bool // stops the watch of the lease's context
	listed bool        // whether runs holds it under job
}

// runs holds the run in progress of each job context: gocron passes the same
// context to Lock and to the task, so RunContext finds the run by it. Runs of
// one job overlap only on different Clients (on one, the rlock refuses a
// second owner); the first listed is the one found.
var runs sync.Map // context.Context -> *run

func start(job context.Context, ls *lease.Lease) *run {
	r := &run{job: job, ls: ls}
	r.ctx, r.cancel = context.WithCancelCause(job)
	// The lease's context ends when it is lost (and at its release, after
	// stop below): the run's context ends with the loss as its cause.
	r.stop = context.AfterFunc(ls.Context(), func() { r.cancel(context.Cause(ls.Context())) })
	_, loaded := runs.LoadOrStore(job, r)
	r.listed = !loaded
	return r
}

// Unlock ends the run: its context, then its lease, released even when ctx
// (the job's context) has ended, as lease.Release is. With
// leasehold.WithHoldAtLeast, a release sooner than d after the acquisition
// leaves the lock taken until then.
func (r *run) Unlock(ctx context.Context) error {
	r.stop()
	r.cancel(context.Canceled)
	if r.listed {
		runs.CompareAndDelete(r.job, r)
	}
	return r.ls.Release(ctx)
}

// RunContext returns, for ctx the context gocron hands a task (its first
// parameter, when a context.Context) of a job whose run a Locker of this
// package locked, a context that also ends when the run's lease is lost:
// context.Cause then wraps lease.ErrLost. A task that must not go on without
// the lock watches it. Outside such a run it returns ctx.
func RunContext(ctx context.Context) context.Context {
	if r, ok := runs.Load(ctx); ok {
		return r.(*run).ctx
	}
	return ctx
}
