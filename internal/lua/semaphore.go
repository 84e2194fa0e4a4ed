package lua

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/script"
)

// Semaphore is a semaphore's keys and arguments for one name and lease,
// derived once so that each run of a script builds nothing it need not.
type Semaphore struct {
	name        string
	acquireKeys []string // NAME, timeouts, channel, claims
	releaseKeys []string // NAME, timeouts, channel
	renewKeys   []string // timeouts
	abandonKeys []string // claims, NAME, channel
	setKeys     []string // NAME, channel
	lease       string   // ms
	grace       string   // ms
}

// NewSemaphore derives the keys of the semaphore name, with the given lease.
// grace is how much longer than its next attempt a waiter's claim lasts.
func NewSemaphore(name string, lease, grace time.Duration) *Semaphore {
	timeouts, channel, claims := script.SemaphoreTimeoutKey(name), script.SemaphoreChannel(name), script.SemaphoreClaimsKey(name)
	return &Semaphore{
		name:        name,
		acquireKeys: []string{name, timeouts, channel, claims},
		releaseKeys: []string{name, timeouts, channel},
		renewKeys:   []string{timeouts},
		abandonKeys: []string{claims, name, channel},
		setKeys:     []string{name, channel},
		lease:       Ms(lease),
		grace:       Ms(grace),
	}
}

// Name is the semaphore's name, the key of its available permits.
func (s *Semaphore) Name() string { return s.name }

// Channel is the semaphore's channel, redisson_sc:{NAME}.
func (s *Semaphore) Channel() string { return s.acquireKeys[2] }

// OverTotal is the error of an attempt for more permits than the semaphore
// has in all (available and taken).
type OverTotal struct{ Asked, Total int64 }

func (e *OverTotal) Error() string {
	return fmt.Sprintf("%d permits asked of a semaphore of %d", e.Asked, e.Total)
}

// claim is the member of owner's claim when it waits for n permits; ""
// for one permit, which is never claimed (it holds back nobody).
func claim(owner string, n int) string {
	if n == 1 {
		return ""
	}
	return owner + ":" + strconv.Itoa(n)
}

// Acquire runs semaphore_acquire: take n permits for the lease owner. With
// wait set, an attempt for several permits that must wait leaves or refreshes
// owner's claim. A failed attempt's Grant.Wait is how long until the earliest
// permit (or blocking claim) expires, 0 when none will. An attempt for more
// permits than the semaphore has returns an *OverTotal.
func (s *Semaphore) Acquire(ctx context.Context, c rueidis.Client, owner string, n int, wait bool) (Grant, error) {
	res := Exec(ctx, c, script.SemaphoreAcquire, s.acquireKeys,
		[]string{strconv.Itoa(n), s.lease, script.PermitPrefix(owner), claim(owner, n), flag(wait), s.grace})
	if v, err := Ints(res); err == nil && len(v) == 2 && v[0] == -1 {
		return Grant{}, &OverTotal{Asked: int64(n), Total: v[1]}
	}
	return ParseGrant(res)
}

// Release runs semaphore_release: give back the n permits of owner. It
// returns Freed, or NotHeld when some were no longer held.
func (s *Semaphore) Release(ctx context.Context, c rueidis.Client, owner string, n int) (int64, error) {
	return Exec(ctx, c, script.SemaphoreRelease, s.releaseKeys, []string{script.PermitPrefix(owner), strconv.Itoa(n)}).AsInt64()
}

// Renewal is the keys and args of semaphore_renew for the n permits of owner.
func (s *Semaphore) Renewal(owner string, n int) (keys, args []string) {
	return s.renewKeys, []string{s.lease, script.PermitPrefix(owner), strconv.Itoa(n)}
}

// Abandon runs semaphore_abandon: withdraw the claim of owner, a waiter for
// n permits that stops waiting.
func (s *Semaphore) Abandon(ctx context.Context, c rueidis.Client, owner string, n int) error {
	return Exec(ctx, c, script.SemaphoreAbandon, s.abandonKeys, []string{claim(owner, n)}).Error()
}

// TrySetPermits runs semaphore_set: it sets the semaphore's permits to n if
// they were never set, and reports whether it did.
func (s *Semaphore) TrySetPermits(ctx context.Context, c rueidis.Client, n int) (bool, error) {
	set, err := Exec(ctx, c, script.SemaphoreSet, s.setKeys, []string{strconv.Itoa(n)}).AsInt64()
	return set == 1, err
}

// OutOfRange is the error of an AddPermits that would leave the semaphore
// more than script.MaxPermits permits available either way.
type OutOfRange struct{ Available, Delta int64 }

func (e *OutOfRange) Error() string {
	return fmt.Sprintf("adding %d permits to the %d available would leave %d, beyond ±%d",
		e.Delta, e.Available, e.Available+e.Delta, int64(script.MaxPermits))
}

// AddPermits runs semaphore_add: it adds delta permits (fewer when delta is
// negative) and returns the permits available after. One whose sum would be
// beyond ±script.MaxPermits writes nothing and returns an *OutOfRange.
func (s *Semaphore) AddPermits(ctx context.Context, c rueidis.Client, delta int) (int64, error) {
	arr, err := Ints(Exec(ctx, c, script.SemaphoreAdd, s.releaseKeys, []string{strconv.Itoa(delta)}))
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
	arr, err := Exec(ctx, c, script.SemaphoreAvailable, s.releaseKeys[:2], nil).AsIntSlice()
	if err != nil {
		return Permits{}, err
	}
	if len(arr) != 3 {
		return Permits{}, fmt.Errorf("lua: unexpected semaphore_available reply of %d values", len(arr))
	}
	return Permits{Available: arr[0], Total: arr[1], Set: arr[2] == 1}, nil
}
