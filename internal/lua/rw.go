package lua

import (
	"context"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/script"
)

// The read-write lock's scripts, Redisson's RReadWriteLock; its force
// release is lock_force_release.
var (
	rwReadAcquire  = load("rw_read_acquire")
	rwReadRelease  = load("rw_read_release")
	rwReadRenew    = load("rw_read_renew")
	rwWriteAcquire = load("rw_write_acquire")
	rwWriteRelease = load("rw_write_release")
	rwWriteRenew   = load("rw_write_renew")
	rwWriteAbandon = load("rw_write_abandon")
)

// writeField is the hash field of owner's write holds: OWNER:write.
func writeField(owner string) string { return owner + ":write" }

// rw is what the read and the write lock of one name share.
type rw struct {
	k            script.Keys
	latchPrefix  string
	lease, latch string // ms
}

func newRW(name string, cfg Config) rw {
	k := script.KeysOf(name)
	return rw{k: k, latchPrefix: k.UnlockLatch(""), lease: Ms(cfg.Lease), latch: cfg.latchMs()}
}

// Name is the lock's name, the key of its hash.
func (l *rw) Name() string { return l.k.Name }

// Wakeup is the lock's channel and its hash, whose invalidation tells of an
// expiry.
func (l *rw) Wakeup(string) (channel, key string) { return l.k.RWChannel, l.k.Name }

// ForceRelease deletes the lock whoever holds it, for read or write, and
// publishes the wake-all message. It reports whether there was a lock to
// delete.
func (l *rw) ForceRelease(ctx context.Context, c rueidis.Client) (bool, error) {
	n, err := lockForceRelease.exec(ctx, c, []string{l.k.Name, l.k.RWChannel}, []string{script.WakeAllMessage}).AsInt64()
	return n == 1, err
}

// Read is the read lock of the read-write lock on one name.
type Read struct {
	Traits
	rw
}

var _ Protocol = (*Read)(nil)

// NewRead returns the read lock of the read-write lock name.
func NewRead(name string, cfg Config) *Read {
	return &Read{Traits: Traits{Kind: KindRWRead}, rw: newRW(name, cfg)}
}

// Try runs rw_read_acquire: take or re-enter a read for owner.
func (r *Read) Try(ctx context.Context, c rueidis.Client, owner string, _ bool) (Grant, error) {
	return r.try(ctx, c, owner, "")
}

// TryUnder is Try for a read under writeOwner's write hold on the lock,
// which the caller holds: the read is admitted at once while that hold
// lasts (the script checks that it does).
func (r *Read) TryUnder(ctx context.Context, c rueidis.Client, owner, writeOwner string) (Grant, error) {
	return r.try(ctx, c, owner, writeField(writeOwner))
}

func (r *Read) try(ctx context.Context, c rueidis.Client, owner, writerField string) (Grant, error) {
	return ParseGrant(rwReadAcquire.exec(ctx, c,
		[]string{r.k.Name, r.k.ReadHolds(owner), r.k.Token, r.k.Writers},
		[]string{r.lease, owner, writerField}))
}

// Release runs rw_read_release.
func (r *Read) Release(ctx context.Context, c rueidis.Client, owner, requestID string, all bool, _ time.Duration) (int64, error) {
	return rwReadRelease.exec(ctx, c,
		[]string{r.k.Name, r.k.RWChannel, r.k.ReadHolds(owner), r.k.RWPrefix, r.latchPrefix + requestID, r.k.Writers},
		[]string{owner, r.latch, flag(all)}).AsInt64()
}

// Presence is the reader's field in the lock hash (its hold count; each
// hold's own key only carries its lease).
func (r *Read) Presence(owner string) Presence { return Presence{Key: r.k.Name, Field: owner} }

// Renewal is rw_read_renew.
func (r *Read) Renewal(owner string) *Call {
	return &Call{script: rwReadRenew, Keys: []string{r.k.Name, r.k.ReadHolds(owner)}, Args: []string{r.lease, owner}}
}

// Write is the write lock of the read-write lock on one name.
type Write struct {
	Traits
	rw
	acquireKeys []string // NAME, token, writers
	renewKeys   []string // NAME
	prefer      bool
	grace       string // ms
}

var _ Protocol = (*Write)(nil)

// NewWrite returns the write lock of the read-write lock name. With
// cfg.PreferWriters, a writer that waits holds new readers back.
func NewWrite(name string, cfg Config) *Write {
	w := &Write{Traits: Traits{Kind: KindRWWrite}, rw: newRW(name, cfg), prefer: cfg.PreferWriters, grace: cfg.graceMs()}
	if w.prefer {
		w.Leaves = w // its announcement, when it waits
	}
	w.acquireKeys = []string{name, w.k.Token, w.k.Writers}
	w.renewKeys = []string{name}
	return w
}

// Try runs rw_write_acquire. With writer preference, an attempt that waits
// announces the writer, holding new readers back, until its next attempt is
// due plus the grace; one that does not (TryAcquire, a re-entry) must not,
// since nobody would withdraw it.
func (w *Write) Try(ctx context.Context, c rueidis.Client, owner string, wait bool) (Grant, error) {
	return ParseGrant(rwWriteAcquire.exec(ctx, c, w.acquireKeys,
		[]string{w.lease, writeField(owner), flag(w.prefer && wait), w.grace}))
}

// Release runs rw_write_release.
func (w *Write) Release(ctx context.Context, c rueidis.Client, owner, requestID string, all bool, _ time.Duration) (int64, error) {
	return rwWriteRelease.exec(ctx, c,
		[]string{w.k.Name, w.k.RWChannel, w.latchPrefix + requestID, w.k.RWPrefix},
		[]string{writeField(owner), w.lease, w.latch, flag(all)}).AsInt64()
}

// Presence is the writer's field, OWNER:write, in the lock hash.
func (w *Write) Presence(owner string) Presence {
	return Presence{Key: w.k.Name, Field: writeField(owner)}
}

// Renewal is rw_write_renew.
func (w *Write) Renewal(owner string) *Call {
	return &Call{script: rwWriteRenew, Keys: w.renewKeys, Args: []string{w.lease, writeField(owner)}}
}

// Abandon runs rw_write_abandon: it withdraws owner's announcement, which
// a writer that waits under writer preference makes (and renews by its own
// attempts, before it runs out).
func (w *Write) Abandon(ctx context.Context, c rueidis.Client, owner string) error {
	return rwWriteAbandon.exec(ctx, c, []string{w.k.Writers, w.k.RWChannel}, []string{writeField(owner)}).Error()
}
