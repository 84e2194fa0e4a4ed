package election

import (
	"context"
	"errors"

	"github.com/leasehold/leasehold/internal/core"
)

// ErrNoLeader is wrapped by Leader's error when nobody leads.
var ErrNoLeader = errors.New("election: no leader")

// Leader is an election's leader, as Leader and Observe report it.
type Leader struct {
	// Value is what the leader published: at its Campaign, or its last
	// Proclaim.
	Value string
	// Token is the term: the fencing token of the leader's Campaign, above
	// every earlier leader's. In a Leader with no Owner (Observe's report
	// that nobody leads), the term that ended.
	Token uint64
	// Owner is the leader's owner field in the lock, CLIENT_ID:LEASE_ID
	// (its lease's Owner); empty when nobody leads.
	Owner string
}

// Leader returns the current leader, read from Redis, or an error wrapping
// ErrNoLeader when nobody (or a Redisson RLock) holds the name.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	const op = "leader"
	rc, err := e.base.Redis(op)
	if err != nil {
		return Leader{}, err
	}
	t, ok, err := e.s.Leader(ctx, rc)
	switch {
	case err != nil:
		return Leader{}, e.base.Fail(op, err)
	case !ok:
		return Leader{}, core.Errorf(op, e.name, "%w", ErrNoLeader)
	}
	return Leader{Value: t.Value, Token: t.Token, Owner: t.Owner}, nil
}
