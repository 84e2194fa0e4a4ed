package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/partition"
)

// partName is partition p's lock name in the group name, as package
// partition names it: its fenced resource is on that name too.
func partName(name string, p int) string { return name + ":" + strconv.Itoa(p) }

// member runs the worker's member of the partition group (KindPartition)
// on c until ctx ends: each fn is a section of its partition, on the
// partition's own resource. It returns Run's error, if Run ended before
// ctx.
func (w *worker) member(ctx context.Context, c *leasehold.Client, res rueidis.Client) error {
	cfg := w.cfg
	resources := make([]*Resource, cfg.Partitions)
	for p := range resources {
		resources[p] = NewResource(res, partName(cfg.Name, p))
	}
	if len(cfg.Static) > 0 {
		return w.static(ctx, res, resources)
	}
	fns := make([]atomic.Int64, cfg.Partitions) // each partition's fns so far, to name them
	err := partition.New(c, cfg.Name, cfg.Partitions).Run(ctx, func(ctx context.Context, p int) error {
		w.part(ctx, lease.FromContext(ctx), p, resources[p], int(fns[p].Add(1)))
		return nil // once ctx has ended: dropped
	})
	switch {
	case ctx.Err() == nil:
		return fmt.Errorf("member of %s: Run returned before the worker stopped: %v", cfg.Name, err)
	case err != nil:
		return fmt.Errorf("member of %s: Run: %w", cfg.Name, err)
	}
	return nil
}

// static runs the fns of cfg.Static (see WorkerConfig.Static) until ctx
// ends, each under a lease of no lock.
func (w *worker) static(ctx context.Context, res rueidis.Client, resources []*Resource) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(w.cfg.Static))
	for _, p := range w.cfg.Static {
		if p < 0 || p >= len(resources) {
			return fmt.Errorf("static partition %d of %d", p, len(resources))
		}
		wg.Go(func() {
			ls, err := (&noLock{rc: res, name: partName(w.cfg.Name, p)}).Acquire(ctx)
			if err != nil {
				errs <- err
				return
			}
			w.part(ctx, ls, p, resources[p], 1)
			_ = ls.Release(context.WithoutCancel(ctx))
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// part is fn of partition p under ls, the k-th this process runs: a
// section that reads the resource, holds, writes one more than it read,
// thinks, and again, until ctx (fn's) ends (revoked, lost, or Run's end);
// it records its start (Entered) and, when it ends, the section.
func (w *worker) part(ctx context.Context, ls *lease.Lease, p int, res *Resource, k int) {
	holder := w.cfg.Process + "/p" + strconv.Itoa(p)
	s := &Section{Holder: holder, ID: holder + "#" + strconv.Itoa(k), Partition: p, Owner: ls.Owner(), Token: ls.Token(), Enter: Now()}
	entered := *s
	w.emit(Record{Entered: &entered})
	// As in a lock's section: the lease's context ends first thing when it
	// is lost, and it is released only once fn has returned.
	lctx := ls.Context()
	var lost Mono
	watched := make(chan struct{})
	stopWatch := context.AfterFunc(lctx, func() {
		defer close(watched)
		lost = Now()
	})
	g := &goroutine{cfg: w.cfg, holder: holder, resource: res, emit: w.emit, stop: w.stop}
	late := w.cfg.LateWrite
	var knew Mono // when fn saw its ctx end for the loss of its lease
	pause := func(d time.Duration) {
		if !sleep(ctx, d) && knew == 0 && lctx.Err() != nil {
			knew = Now()
		}
	}
	for {
		read, ok := g.write(s, ctx, "enter", 0, late)
		if ok {
			pause(w.cfg.Hold/2 + rand.N(w.cfg.Hold/2+1))
			g.write(s, ctx, "exit", read+1, late)
		}
		if ctx.Err() != nil {
			break
		}
		pause(w.cfg.Think)
		if ctx.Err() != nil {
			break
		}
	}
	if late {
		// A late writer makes one more access once it has seen its ctx
		// end, unchecked: a holder paused past its lease that acts on
		// once it runs again, whatever it was doing when it stopped.
		g.write(s, ctx, "enter", 0, true)
	}
	s.Exit = Now()
	if stopWatch() {
		close(watched) // not lost while fn ran
	}
	<-watched
	if d := ls.Deadline(); !d.IsZero() {
		s.Deadline = Now().Add(time.Until(d))
	}
	if cause := context.Cause(lctx); lost != 0 && (errors.Is(cause, lease.ErrLost) || errors.Is(cause, lease.ErrClosed)) {
		if knew != 0 && knew < lost {
			lost = knew
		}
		s.Lost, s.LostErr = lost, cause.Error()
	}
	w.emit(Record{Section: s})
}

// sleep waits d, or until ctx ends: it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
