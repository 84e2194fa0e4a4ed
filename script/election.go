package script

// The election's scripts (package election): a leader holds the lock NAME on
// Redisson's RLock layout (as rlock does, so that a Redisson RLock of the
// same name excludes campaigners and is excluded by a leader) and publishes
// its value in LeaderKey, a hash (value, token, owner) that takes the lock's
// lease, is renewed with it and is deleted when the lock is released. Every
// change of LeaderKey is told on ElectionChannel with ElectionMessage.
var (
	ElectionCampaign = load("election_campaign")
	ElectionRelease  = load("election_release")
	ElectionRenew    = load("election_renew")
	ElectionProclaim = load("election_proclaim")
	ElectionLeader   = load("election_leader")
)

// LeaderKey is where the leader of the election NAME publishes its value:
// {NAME}:leader, a hash of the fields value, token (the term: the fencing
// token of the leader's first campaign) and owner (the leader's OWNER field
// in the lock hash NAME). It is a key of its own, not a field of NAME, which
// Redisson would read as another owner. The leader leads while NAME holds
// its owner field and this key names it. Redisson knows nothing of it.
func LeaderKey(name string) string { return Suffixed(name, "leader") }

// ElectionChannel is where every change of the leader of the election NAME
// is told, the message ElectionMessage: a new leader, a new value, the end of
// a term. leasehold_election__channel:{NAME}; Redisson knows nothing of it.
// Observers listen here rather than on the lock's channel, where a release's
// "0" is for one waiter: a campaigner's wake-up never goes to an observer,
// and a change of value wakes no campaigner.
func ElectionChannel(name string) string { return Prefixed("leasehold_election__channel", name) }

// ElectionMessage is the message published on ElectionChannel: read the
// leader again. It is the message that wakes every waiter of a channel (a
// Client's hub wakes one waiter on any other), so every observer hears it.
const ElectionMessage = "1"
