package lease

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Do acquires l, runs fn while the lease holds, and releases it when fn
// returns or panics; if l is not acquired, fn is not called and Do returns
// Acquire's error. fn's ctx ends on loss or when ctx ends, and carries the
// lease (FromContext, for its fencing token). Do returns fn's error,
// wrapping ErrLost if the lease was lost under fn, and never returns with
// the lock renewed: a release Redis does not confirm is tried again, then
// left to run out within its lease.
func Do(ctx context.Context, l Locker, fn func(ctx context.Context) error) error {
	held, err := l.Acquire(ctx)
	if err != nil {
		return err
	}
	return held.run(ctx, fn)
}

// TryDo is Do with one attempt: when another owner holds the lock it
// returns an error wrapping ErrNotAcquired at once, and fn is not called.
func TryDo(ctx context.Context, l Locker, fn func(ctx context.Context) error) error {
	held, err := l.TryAcquire(ctx)
	if err != nil {
		return err
	}
	return held.run(ctx, fn)
}

// FromContext returns the lease that Do or TryDo runs fn under, when ctx
// is fn's ctx or made from it (the innermost, under nested calls), for its
// fencing token; nil otherwise.
func FromContext(ctx context.Context) *Lease {
	l, _ := ctx.Value(leaseKey{}).(*Lease)
	return l
}

// leaseKey is the context key of fn's lease.
type leaseKey struct{}

// errDone is the cause of fn's ctx once fn has returned.
var errDone = errors.New("lease: do: fn returned")

// run runs fn under the lease and releases it (see Do).
func (l *Lease) run(ctx context.Context, fn func(ctx context.Context) error) (err error) {
	// The lease's context ends on loss; the caller's ctx must end fn too.
	fnCtx, cancel := context.WithCancelCause(context.WithValue(l.Context(), leaseKey{}, l))
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	defer func() {
		// Also on a panic, which goes on once the lease is given back.
		stop()
		cancel(errDone)
		err = l.finish(ctx, err)
	}()
	return fn(fnCtx)
}

// finish releases the lease once fn has returned fnErr, and returns Do's
// error. The release is detached from ctx's cancellation and bounded, as
// Release is.
func (l *Lease) finish(ctx context.Context, fnErr error) error {
	var lost error
	select {
	case <-l.Lost():
		lost = l.Err()
		if !errors.Is(lost, ErrLost) { // the Client closed under fn
			lost = fmt.Errorf("%w: %w", ErrLost, lost)
		}
	default:
	}
	relErr := l.giveBack(context.WithoutCancel(ctx)) // says "not held" when lost
	switch {
	case lost != nil && fnErr == nil:
		return lost
	case lost != nil && errors.Is(fnErr, l.Err()):
		// fn returned the loss, or wrapped it (context.Cause of its ctx):
		// said once.
		if errors.Is(fnErr, ErrLost) {
			return fnErr
		}
		return fmt.Errorf("%w: %w", ErrLost, fnErr)
	case lost != nil:
		return errors.Join(fnErr, lost)
	case fnErr != nil && relErr != nil:
		return errors.Join(fnErr, relErr)
	case fnErr != nil:
		return fnErr
	}
	return relErr
}

// giveBackTries is how many times giveBack releases a lease Redis does not
// confirm the release of, before it leaves the lock to run out.
const giveBackTries = 10

// giveBack releases the lease, trying again while Redis does not confirm
// the release and the lease is not lost (each try is safe to repeat: see
// core.Hold.release). A lease left held would be renewed by its Client with
// no one to release it, so after the last try it is abandoned: no longer
// renewed, it runs out within its lease.
func (l *Lease) giveBack(ctx context.Context) error {
	pause := 100 * time.Millisecond
	for try := 1; ; try++ {
		err := l.Release(ctx)
		if err == nil || errors.Is(err, ErrNotHeld) || errors.Is(err, ErrRedis) {
			return err
		}
		if try == giveBackTries {
			l.hold().Abandon(&Error{Op: "hold", Name: l.Name(),
				Err: fmt.Errorf("%w: its release was not confirmed, left to run out: %w", ErrLost, err)})
			return err
		}
		select {
		case <-l.Lost():
			return l.Release(ctx) // reports the loss
		case <-time.After(pause):
		}
		pause = min(2*pause, 2*time.Second)
	}
}
