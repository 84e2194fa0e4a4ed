package lua

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/script"
)

// Election is an election's keys and arguments for one name and lease,
// derived once so that each run of a script builds nothing it need not. Its
// lock is NAME on rlock's layout; the leader's value is in script.LeaderKey.
type Election struct {
	name, leader, channel, lockChannel, latchPrefix string
	lease, latch                                    string // ms
}

// NewElection derives the keys of the election name, with the given lease
// and the lifetime of release latches.
func NewElection(name string, lease, latch time.Duration) *Election {
	return &Election{
		name:        name,
		leader:      script.LeaderKey(name),
		channel:     script.ElectionChannel(name),
		lockChannel: script.LockChannel(name),
		latchPrefix: script.UnlockLatchKey(name, ""),
		lease:       Ms(lease),
		latch:       Ms(latch),
	}
}

// Name is the election's name, the key of its lock.
func (e *Election) Name() string { return e.name }

// LeaderKey is the key of the leader's value, {NAME}:leader.
func (e *Election) LeaderKey() string { return e.leader }

// Channel is where changes of the leader are told,
// leasehold_election__channel:{NAME}.
func (e *Election) Channel() string { return e.channel }

// LockChannel is the lock's unlock channel, redisson_lock__channel:{NAME}.
func (e *Election) LockChannel() string { return e.lockChannel }

// Campaign runs election_campaign: take (or re-enter) the lock for owner and
// publish value as the leader's, in one script.
func (e *Election) Campaign(ctx context.Context, c rueidis.Client, owner, value string) (Grant, error) {
	return ParseGrant(Exec(ctx, c, script.ElectionCampaign,
		[]string{e.name, script.TokenKey(e.name), e.leader, e.channel, e.lockChannel},
		[]string{e.lease, owner, value, script.ElectionMessage, script.UnlockMessage}))
}

// Release runs election_release for one hold of owner, or every hold when
// all is set; the last hold takes the leader key with it. requestID names
// the release so that a retry is answered from the latch.
func (e *Election) Release(ctx context.Context, c rueidis.Client, owner, requestID string, all bool) (int64, error) {
	return Exec(ctx, c, script.ElectionRelease,
		[]string{e.name, e.lockChannel, e.latchPrefix + requestID, e.leader, e.channel},
		[]string{script.UnlockMessage, e.lease, owner, e.latch, flag(all), script.ElectionMessage}).AsInt64()
}

// Renewal is election_renew for owner as the keeper runs it on c: the
// script (its sharded form on a Sharded client, since the keeper runs it
// as given), its KEYS and its ARGV.
func (e *Election) Renewal(c rueidis.Client, owner string) (s *script.Script, keys, args []string) {
	s = script.ElectionRenew
	if _, ok := c.(Sharded); ok {
		s = s.Sharded()
	}
	return s, []string{e.name, e.leader, e.lockChannel, e.channel},
		[]string{e.lease, owner, script.UnlockMessage, script.ElectionMessage}
}

// Proclaim runs election_proclaim: it publishes value as owner's, and
// reports false (writing nothing) when owner does not lead.
func (e *Election) Proclaim(ctx context.Context, c rueidis.Client, owner, value string) (bool, error) {
	n, err := Exec(ctx, c, script.ElectionProclaim, []string{e.name, e.leader, e.channel},
		[]string{owner, value, script.ElectionMessage}).AsInt64()
	return n == 1, err
}

// Term is a leader as election_leader reads it.
type Term struct {
	Value string
	Token uint64 // the term: the fencing token of the leader's first campaign
	Owner string
	// TTL is the lock's remaining lease, as the server measured it; zero or
	// less when it has no expiry.
	TTL time.Duration
}

// Leader runs election_leader: the current leader, and false when there is
// none.
func (e *Election) Leader(ctx context.Context, c rueidis.Client) (Term, bool, error) {
	arr, err := Exec(ctx, c, script.ElectionLeader, []string{e.name, e.leader}, nil).ToArray()
	if err != nil || len(arr) == 0 {
		return Term{}, false, err
	}
	if len(arr) != 4 {
		return Term{}, false, fmt.Errorf("lua: unexpected election_leader reply of %d values", len(arr))
	}
	var t Term
	var token string
	var pttl int64
	if t.Value, err = arr[0].ToString(); err == nil {
		if token, err = arr[1].ToString(); err == nil {
			if t.Owner, err = arr[2].ToString(); err == nil {
				pttl, err = arr[3].AsInt64()
			}
		}
	}
	if err == nil {
		t.Token, err = strconv.ParseUint(token, 10, 64)
	}
	if err != nil {
		return Term{}, false, fmt.Errorf("lua: unexpected election_leader reply: %w", err)
	}
	t.TTL = time.Duration(pttl) * time.Millisecond
	return t, true, nil
}
