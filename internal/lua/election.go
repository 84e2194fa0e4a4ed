package lua

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/script"
)

// The election's scripts: a leader holds the lock NAME on the reentrant
// lock's layout (so that a Redisson RLock of the same name excludes
// campaigners and is excluded by a leader) and publishes its value in
// Keys.Leader, a hash (value, token, owner) that takes the lock's lease, is
// renewed with it and is deleted when the lock is released. Every change of
// it is told on Keys.ElectionChannel with script.WakeAllMessage.
var (
	electionCampaign = load("election_campaign")
	electionRelease  = load("election_release")
	electionRenew    = load("election_renew")
	electionProclaim = load("election_proclaim")
	electionLeader   = load("election_leader")
)

// Election is the election on one name, its keys and arguments derived
// once. Campaign is the Protocol of its campaigns.
type Election struct {
	k            script.Keys
	latchPrefix  string
	campaignKeys []string // NAME, token, leader, election channel, lock channel
	renewKeys    []string // NAME, leader, lock channel, election channel
	proclaimKeys []string // NAME, leader, election channel
	leaderKeys   []string // NAME, leader
	lease, latch string   // ms
}

// NewElection returns the election name with the settings of cfg.
func NewElection(name string, cfg Config) *Election {
	k := script.KeysOf(name)
	return &Election{
		k:            k,
		latchPrefix:  k.UnlockLatch(""),
		campaignKeys: []string{name, k.Token, k.Leader, k.ElectionChannel, k.Channel},
		renewKeys:    []string{name, k.Leader, k.Channel, k.ElectionChannel},
		proclaimKeys: []string{name, k.Leader, k.ElectionChannel},
		leaderKeys:   []string{name, k.Leader},
		lease:        Ms(cfg.Lease),
		latch:        cfg.latchMs(),
	}
}

// Name is the election's name, the key of its lock.
func (e *Election) Name() string { return e.k.Name }

// LeaderKey is the key of the leader's value, {NAME}:leader.
func (e *Election) LeaderKey() string { return e.k.Leader }

// Channel is where changes of the leader are told,
// leasehold_election__channel:{NAME}.
func (e *Election) Channel() string { return e.k.ElectionChannel }

// Campaign returns the Protocol of a campaign that publishes value as the
// leader's when it wins.
func (e *Election) Campaign(value string) *Campaign {
	return &Campaign{Traits: Traits{Kind: KindElection}, e: e, value: value}
}

// Campaign is one campaign of an election: the reentrant lock NAME, with
// the leader key written, renewed and deleted along with the hold.
type Campaign struct {
	Traits
	e     *Election
	value string
}

var _ Protocol = (*Campaign)(nil)

// Try runs election_campaign: take (or re-enter) the lock for owner and
// publish the value as the leader's, in one script.
func (p *Campaign) Try(ctx context.Context, c rueidis.Client, owner string, _ bool) (Grant, error) {
	return ParseGrant(electionCampaign.exec(ctx, c, p.e.campaignKeys,
		[]string{p.e.lease, owner, p.value, script.WakeAllMessage, script.UnlockMessage}))
}

// Release runs election_release; the last hold takes the leader key with it.
func (p *Campaign) Release(ctx context.Context, c rueidis.Client, owner, requestID string, all bool, _ time.Duration) (int64, error) {
	k := p.e.k
	return electionRelease.exec(ctx, c,
		[]string{k.Name, k.Channel, p.e.latchPrefix + requestID, k.Leader, k.ElectionChannel},
		[]string{script.UnlockMessage, p.e.lease, owner, p.e.latch, flag(all), script.WakeAllMessage}).AsInt64()
}

// Renewal is election_renew.
func (p *Campaign) Renewal(owner string) *Call {
	return &Call{script: electionRenew, Keys: p.e.renewKeys,
		Args: []string{p.e.lease, owner, script.UnlockMessage, script.WakeAllMessage}}
}

// Presence is the leader's field in the lock hash, as rlock's.
func (p *Campaign) Presence(owner string) Presence { return Presence{Key: p.e.k.Name, Field: owner} }

// Wakeup is the reentrant lock's: a campaigner waits as an rlock waiter
// does, so that Redisson's unlock wakes it too.
func (p *Campaign) Wakeup(string) (channel, key string) { return p.e.k.Channel, p.e.k.Name }

// Proclaim runs election_proclaim: it publishes value as owner's, and
// reports false (writing nothing) when owner does not lead.
func (e *Election) Proclaim(ctx context.Context, c rueidis.Client, owner, value string) (bool, error) {
	n, err := electionProclaim.exec(ctx, c, e.proclaimKeys, []string{owner, value, script.WakeAllMessage}).AsInt64()
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
	arr, err := electionLeader.exec(ctx, c, e.leaderKeys, nil).ToArray()
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
