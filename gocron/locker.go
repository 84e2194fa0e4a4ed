package leaseholdgocron

import (
	"context"
	"sync"

	"github.com/go-co-op/gocron/v2"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

// NewLocker returns a gocron.Locker on c: each run makes one attempt on the
// rlock named after the job, with opts, and is skipped (an error wrapping
// lease.ErrNotAcquired) when it is taken. Give it leasehold.WithHoldAtLeast
// (docs/cron.md says how to choose d).
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

// RunContext returns, for the ctx gocron hands a task of a run this
// package's Locker locked, a context that also ends when the run's lease is
// lost (its cause wraps lease.ErrLost); outside such a run, ctx.
func RunContext(ctx context.Context) context.Context {
	if r, ok := runs.Load(ctx); ok {
		return r.(*run).ctx
	}
	return ctx
}
