package core

import (
	"context"
	"sync"
	"time"

	"github.com/leasehold/leasehold/internal/lua"
)

// places keeps the places of a Client's waiters that hold one while they
// sleep (a fair lock's queue): per lock name and queue timeout (lua.Keep.ID),
// one script every Keep.Every for all of the lock's waiters, batched with every other lock
// due then into one pipelined round on the keeper's goroutine, rather than
// an attempt by each waiter. A waiter whose place is gone is poked: it tries
// again, which gives it a place at the tail.
type places struct {
	mu     sync.Mutex
	groups map[string]*placeGroup // by lua.Keep.ID: the locks of one name and queue timeout share one
	// added is signalled (buffer 1) when a lock gets its first waiter: the
	// keeper's timer must take its due time into account.
	added chan struct{}
}

// placeGroup is one lock's waiters on the Client.
type placeGroup struct {
	keep   *lua.Keep // the first waiter's: any of them runs the same script
	due    time.Time
	owners map[string]func() // owner -> its poke
}

func newPlaces() *places {
	return &places{groups: make(map[string]*placeGroup), added: make(chan struct{}, 1)}
}

// KeepPlace keeps owner's place in the lock of keep while it waits, until
// the returned stop. poke is called, from the keeper's goroutine, when the
// place is found gone; it must not block.
func (k *Keeper) KeepPlace(keep *lua.Keep, owner string, poke func()) (stop func()) {
	p := k.places
	p.mu.Lock()
	id := keep.ID()
	g := p.groups[id]
	if g == nil {
		// The owner's attempt has just set its deadline a queue timeout
		// ahead: the first round is due in a third of that.
		g = &placeGroup{keep: keep, due: time.Now().Add(keep.Every), owners: make(map[string]func())}
		p.groups[id] = g
		select {
		case p.added <- struct{}{}:
		default:
		}
	}
	g.owners[owner] = poke
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		delete(g.owners, owner)
		if len(g.owners) == 0 && p.groups[id] == g {
			delete(p.groups, id)
		}
		p.mu.Unlock()
	}
}

// next is how long until the next round is due; false when no place is kept.
func (p *places) next() (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var first time.Time
	for _, g := range p.groups {
		if first.IsZero() || g.due.Before(first) {
			first = g.due
		}
	}
	return time.Until(first), !first.IsZero()
}

// placeRun is one script of a round: owners of the lock of keep.
type placeRun struct {
	keep   *lua.Keep
	g      *placeGroup
	owners []string
}

// due takes the runs of every lock due by now, and of those due within a
// quarter of their interval, so that locks whose rounds drift close share
// one round trip.
func (p *places) due(now time.Time) []placeRun {
	p.mu.Lock()
	defer p.mu.Unlock()
	var runs []placeRun
	for _, g := range p.groups {
		keep := g.keep
		if g.due.After(now.Add(keep.Every / 4)) {
			continue
		}
		owners := make([]string, 0, len(g.owners))
		for o := range g.owners {
			owners = append(owners, o)
		}
		for len(owners) > 0 {
			n := min(len(owners), lua.MaxKept)
			runs = append(runs, placeRun{keep: keep, g: g, owners: owners[:n]})
			owners = owners[n:]
		}
	}
	return runs
}

// keepPlaces runs one round of the places due: one pipelined DoMulti.
// A lock whose run failed (no answer, an error) is tried again after a
// tenth of its interval; its waiters' places last three intervals.
func (k *Keeper) keepPlaces() {
	sent := time.Now()
	runs := k.places.due(sent)
	if len(runs) == 0 {
		return
	}
	calls := make([]*lua.Call, len(runs))
	longest := time.Duration(0)
	for i, r := range runs {
		calls[i] = r.keep.Call(r.owners)
		longest = max(longest, r.keep.Every)
	}
	ctx, cancel := context.WithTimeout(k.ctx, longest)
	defer cancel()
	res := k.exec(ctx, k.rc, calls, false)

	var pokes []func()
	k.places.mu.Lock()
	for i, r := range runs {
		missing, err := lua.Missing(res[i])
		if err != nil {
			r.g.due = time.Now().Add(r.keep.Every / 10)
			continue
		}
		r.g.due = sent.Add(r.keep.Every)
		for _, j := range missing {
			if j < 0 || j >= len(r.owners) {
				continue
			}
			if poke, ok := r.g.owners[r.owners[j]]; ok {
				pokes = append(pokes, poke)
			}
		}
	}
	k.places.mu.Unlock()
	for _, poke := range pokes {
		poke()
	}
}
