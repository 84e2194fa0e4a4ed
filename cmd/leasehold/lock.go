package main

import (
	"context"
	"strings"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/script"
)

// lock is one snapshot of a lock, as the library reads it (lua.Inspect), and
// the connections of the Clients of its holders and waiters, which annotate
// fills in (see clients).
type lock struct {
	lua.State
	prefix string // the key prefix of the names given (-prefix), left out of names shown
	// clients is how many connections are subscribed to the lock's
	// channel (see waiting), -1 when not counted: what Redis knows of
	// the waiters of a lock with no queue in Redis.
	clients int64
	byID    map[string]*conn // Client ID -> its connection
	byHead  map[string]*conn // the first 16 hex digits of a Client ID -> the same
	// hint is, for a name found free, the locks whose keys end with it
	// under another prefix (see lookElsewhere); nil when not looked for.
	hint *prefixHint
}

// conn is the connection of owner's Client, nil when none is known.
func (s *lock) conn(owner string) *conn { return s.byID[ownerClient(owner)] }

// permitConn is the connection of the Client that took the permit (or the
// lease of permits) id, nil when none is known.
func (s *lock) permitConn(id string) *conn { return s.byHead[permitHead(id)] }

// readState takes one snapshot of the lock name (under the key prefix).
func (e env) readState(ctx context.Context, name string) (*lock, error) {
	s, err := lua.Inspect(ctx, e.rc, e.prefix+name)
	if err != nil {
		return nil, err
	}
	l := &lock{State: s, prefix: e.prefix}
	return l, e.waiting(ctx, l)
}

// waiting counts, for a lock whose waiters Redis keeps no list of (rlock,
// election, rw), the Clients subscribed to its channel (lua.Listeners): 0
// says nobody waits.
func (e env) waiting(ctx context.Context, s *lock) error {
	s.clients = -1
	var ch string
	switch s.Shape {
	case lua.ShapeRLock, lua.ShapeElection:
		ch = script.KeysOf(s.Name).Channel
	case lua.ShapeRW:
		ch = script.KeysOf(s.Name).RWChannel
	default:
		return nil
	}
	n, err := lua.Listeners(ctx, e.rc, ch)
	if err != nil {
		return err
	}
	s.clients = n
	return nil
}

// shown is the lock's name as the command shows it: without the key prefix.
func (s *lock) shown() string { return strings.TrimPrefix(s.Name, s.prefix) }

// forceRelease deletes the lock whoever holds it and wakes its waiters the
// way its kind does, through the scripts leasehold's own ForceRelease runs.
// It reports whether there was a lock to delete.
func forceRelease(ctx context.Context, rc rueidis.Client, s *lock) (bool, error) {
	f := forceReleaser(s.Shape, s.Name)
	if f == nil {
		return false, nil
	}
	return f.ForceRelease(ctx, rc)
}

// forceReleaser is the force release of a lock of shape named name, nil for
// a shape that has none (a semaphore's permits, a free name).
func forceReleaser(shape lua.Shape, name string) lua.ForceReleaser {
	switch shape {
	case lua.ShapeRLock, lua.ShapeElection:
		// The leader's next renewal finds NAME gone, deletes {NAME}:leader
		// and tells the observers; the unlock message wakes a campaigner.
		return lua.NewLock(name, lua.Config{})
	case lua.ShapeFair:
		return lua.NewFair(name, lua.Config{})
	case lua.ShapeRW:
		return lua.NewWrite(name, lua.Config{})
	}
	return nil
}
