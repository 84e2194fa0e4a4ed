package lua

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/script"
)

// The semaphore's scripts, on Redisson's RPermitExpirableSemaphore layout:
// NAME holds the permits available (a decimal integer), Keys.SemaphoreTimeout
// one entry per permit taken (permit id -> expiry, epoch ms on the server's
// clock), and every change that frees permits publishes the permits then
// available on Keys.SemaphoreChannel, a message Redisson reads as a count of
// waiters to wake.
var (
	semaphoreAcquire   = load("semaphore_acquire")
	semaphoreRelease   = load("semaphore_release")
	semaphoreRenew     = load("semaphore_renew")
	semaphoreAbandon   = load("semaphore_abandon")
	semaphoreSet       = load("semaphore_set")
	semaphoreAdd       = load("semaphore_add")
	semaphoreAvailable = load("semaphore_available")
)

// Semaphore is the semaphore on one name, its keys and arguments derived
// once. Weighted is the Protocol of its leases.
type Semaphore struct {
	k           script.Keys
	acquireKeys []string // NAME, timeouts, channel, claims
	releaseKeys []string // NAME, timeouts, channel
	renewKeys   []string // timeouts
	abandonKeys []string // claims, NAME, channel
	setKeys     []string // NAME, channel
	lease       string   // ms
	grace       string   // ms
}

// NewSemaphore returns the semaphore name with the settings of cfg.
func NewSemaphore(name string, cfg Config) *Semaphore {
	k := script.KeysOf(name)
	return &Semaphore{
		k:           k,
		acquireKeys: []string{name, k.SemaphoreTimeout, k.SemaphoreChannel, k.SemaphoreClaims},
		releaseKeys: []string{name, k.SemaphoreTimeout, k.SemaphoreChannel},
		renewKeys:   []string{k.SemaphoreTimeout},
		abandonKeys: []string{k.SemaphoreClaims, name, k.SemaphoreChannel},
		setKeys:     []string{name, k.SemaphoreChannel},
		lease:       Ms(cfg.Lease),
		grace:       cfg.graceMs(),
	}
}

// Name is the semaphore's name, the key of its available permits.
func (s *Semaphore) Name() string { return s.k.Name }

// Weighted returns the Protocol of the semaphore's leases of n permits each.
func (s *Semaphore) Weighted(n int) *Weighted {
	w := &Weighted{Traits: Traits{Kind: KindSemaphore, Weight: n}, s: s, n: n, count: strconv.Itoa(n)}
	if n > 1 {
		w.Leaves = w // its claim, when it waits (one permit claims nothing)
	}
	return w
}

// Weighted is a semaphore's leases of n permits each: taken, renewed and
// given back together. They are never re-entered.
type Weighted struct {
	Traits
	s     *Semaphore
	n     int
	count string // n, as the scripts take it
}

var _ Protocol = (*Weighted)(nil)

// claim is the member of owner's claim while it waits; "" for one permit,
// which is never claimed (it holds back nobody).
func (w *Weighted) claim(owner string) string {
	if w.n == 1 {
		return ""
	}
	return owner + ":" + w.count
}

// Try runs semaphore_acquire: take n permits for the lease owner. With wait
// set, an attempt for several permits that must wait leaves or refreshes
// owner's claim (larger requests first); one that does not (TryAcquire)
// must not, since nobody would withdraw it. A failed attempt's Grant.Wait is
// how long until the earliest permit (or blocking claim) expires, 0 when
// none will. An attempt for more permits than the semaphore has returns an
// *OverTotal.
func (w *Weighted) Try(ctx context.Context, c rueidis.Client, owner string, wait bool) (Grant, error) {
	res := semaphoreAcquire.exec(ctx, c, w.s.acquireKeys,
		[]string{w.count, w.s.lease, PermitPrefix(owner), w.claim(owner), flag(wait), w.s.grace})
	if v, err := Ints(res); err == nil && len(v) == 2 && v[0] == -1 {
		return Grant{}, &OverTotal{Asked: int64(w.n), Total: v[1]}
	}
	return ParseGrant(res)
}

// Release runs semaphore_release: give back the n permits of owner, all of
// them whatever all says. It returns Freed, or NotHeld when some were no
// longer held.
func (w *Weighted) Release(ctx context.Context, c rueidis.Client, owner, _ string, _ bool, _ time.Duration) (int64, error) {
	return semaphoreRelease.exec(ctx, c, w.s.releaseKeys, []string{PermitPrefix(owner), w.count}).AsInt64()
}

// Renewal is semaphore_renew for the n permits of owner.
func (w *Weighted) Renewal(owner string) *Call {
	return &Call{script: semaphoreRenew, Keys: w.s.renewKeys, Args: []string{w.s.lease, PermitPrefix(owner), w.count}}
}

// Presence is the lease's n permits in the semaphore's sorted set of
// permits taken.
func (w *Weighted) Presence(owner string) Presence {
	ids := make([]string, w.n)
	for i := range ids {
		ids[i] = PermitID(owner, i)
	}
	return Presence{Key: w.s.k.SemaphoreTimeout, Members: ids}
}

// Abandon runs semaphore_abandon: it withdraws the claim of owner, a waiter
// for several permits that stops waiting (the claim is renewed by its own
// attempts, before it runs out).
func (w *Weighted) Abandon(ctx context.Context, c rueidis.Client, owner string) error {
	return semaphoreAbandon.exec(ctx, c, w.s.abandonKeys, []string{w.claim(owner)}).Error()
}

// Wakeup is the semaphore's channel and its count of permits.
func (w *Weighted) Wakeup(string) (channel, key string) { return w.s.k.SemaphoreChannel, w.s.k.Name }

// OverTotal is the error of an attempt for more permits than the semaphore
// has in all (available and taken): bad input, it wraps lease.ErrInvalid.
type OverTotal struct{ Asked, Total int64 }

func (e *OverTotal) Error() string {
	return fmt.Sprintf("%v: %d permits asked of a semaphore of %d", lease.ErrInvalid, e.Asked, e.Total)
}

func (e *OverTotal) Unwrap() error { return lease.ErrInvalid }

// TrySetPermits runs semaphore_set: it sets the semaphore's permits to n if
// they were never set, and reports whether it did.
func (s *Semaphore) TrySetPermits(ctx context.Context, c rueidis.Client, n int) (bool, error) {
	set, err := semaphoreSet.exec(ctx, c, s.setKeys, []string{strconv.Itoa(n)}).AsInt64()
	return set == 1, err
}

// OutOfRange is the error of an AddPermits that would leave the semaphore
// more than MaxPermits permits available either way.
type OutOfRange struct{ Available, Delta int64 }

func (e *OutOfRange) Error() string {
	return fmt.Sprintf("adding %d permits to the %d available would leave %d, beyond ±%d",
		e.Delta, e.Available, e.Available+e.Delta, int64(MaxPermits))
}

// AddPermits runs semaphore_add: it adds delta permits (fewer when delta is
// negative) and returns the permits available after. One whose sum would be
// beyond ±MaxPermits writes nothing and returns an *OutOfRange.
func (s *Semaphore) AddPermits(ctx context.Context, c rueidis.Client, delta int) (int64, error) {
	arr, err := Ints(semaphoreAdd.exec(ctx, c, s.releaseKeys, []string{strconv.Itoa(delta)}))
	if err != nil {
		return 0, err
	}
	if len(arr) != 2 {
		return 0, fmt.Errorf("lua: unexpected semaphore_add reply of %d values", len(arr))
	}
	if arr[0] != 1 {
		return 0, &OutOfRange{Available: arr[1], Delta: int64(delta)}
	}
	return arr[1], nil
}

// Permits is what semaphore_available reads of a semaphore.
type Permits struct {
	// Available is how many permits an attempt could take now: those
	// available and those whose expiry has passed.
	Available int64
	// Total is the permits available plus those taken.
	Total int64
	// Set reports whether the semaphore's permits were ever set.
	Set bool
}

// Available runs semaphore_available, which only reads.
func (s *Semaphore) Available(ctx context.Context, c rueidis.Client) (Permits, error) {
	arr, err := semaphoreAvailable.exec(ctx, c, s.releaseKeys[:2], nil).AsIntSlice()
	if err != nil {
		return Permits{}, err
	}
	if len(arr) != 3 {
		return Permits{}, fmt.Errorf("lua: unexpected semaphore_available reply of %d values", len(arr))
	}
	return Permits{Available: arr[0], Total: arr[1], Set: arr[2] == 1}, nil
}
