package redistest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// Redisson is a stand-in for a Java service's Redisson client: RedissonLock's
// protocol (Redisson 3.44 and later) over a plain rueidis client, its scripts
// verbatim (RedissonLockScript, RedissonUnlockScript), sent by EVALSHA as
// Redisson's script cache sends them, for tests and benchmarks that share a
// lock between leasehold and Redisson:
//
//   - Lock runs the lock script as the owner UUID:THREAD_ID, a THREAD_ID of
//     its own per call, as each Java thread has its own;
//   - a Lock that must wait subscribes to redisson_lock__channel:{NAME}, one
//     subscription per name shared by the client's waiters and dropped by the
//     last to leave; each unlock message lets one waiter try again
//     (Redisson's latch is a semaphore released once per message), and a
//     waiter that hears nothing tries again after the pttl the lock script
//     returned;
//   - the unlock runs the unlock script, which publishes the unlock message
//     and sets the unlock latch redisson_unlock_latch:{NAME}:REQUEST_ID, then
//     deletes the latch without waiting, as unlockInnerAsync does.
//
// It renews nothing: hold a lock for less than its lease. Close ends it.
type Redisson struct {
	rc       rueidis.Client
	id       string // the client's UUID, the owners' prefix
	lease    string // ms
	threads  atomic.Int64
	deleting sync.WaitGroup // the latch DELs in flight

	mu      sync.Mutex
	entries map[string]*redissonEntry // subscriptions, by lock name
}

// redissonEntry is one name's subscription and its latch, as Redisson's
// RedissonLockEntry.
type redissonEntry struct {
	refs       int           // waiters using it, under Redisson.mu
	latch      chan struct{} // a permit per unlock message, up to its capacity
	subscribed chan struct{} // closed when SUBSCRIBE is confirmed or Receive failed
	err        error         // why Receive ended before subscribing; read after subscribed
	cancel     context.CancelFunc
	done       chan struct{} // closed when the subscription is gone
}

var (
	redissonLock   = rueidis.NewLuaScript(RedissonLockScript)
	redissonUnlock = rueidis.NewLuaScript(RedissonUnlockScript)
)

const (
	// redissonLatchMillis is the unlock latch's life: Redisson's default
	// (timeout 3s + retry delay up to 2s) x 4 attempts.
	redissonLatchMillis = "20000"
	// redissonUnlockMessage is LockPubSub.UNLOCK_MESSAGE.
	redissonUnlockMessage = "0"
)

// NewRedisson returns a Redisson client stand-in on a client of its own to
// addr, leasing its locks for 30s (Redisson's lockWatchdogTimeout).
func NewRedisson(addr string) (*Redisson, error) {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		return nil, err
	}
	return NewRedissonOn(rc, 30*time.Second), nil
}

// NewRedissonOn returns a Redisson client stand-in that sends every command
// through rc (a wrapper of the caller's that counts them, say) and leases its
// locks for lease. Close closes rc.
func NewRedissonOn(rc rueidis.Client, lease time.Duration) *Redisson {
	return &Redisson{
		rc: rc,
		id: fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rand.Uint32(), rand.Uint32N(1<<16),
			rand.Uint32N(1<<12), rand.Uint32N(1<<12), rand.Uint64N(1<<48)),
		lease:   strconv.FormatInt(lease.Milliseconds(), 10),
		entries: make(map[string]*redissonEntry),
	}
}

// Close waits for the unlocks' latch deletions, then closes the client; every
// Lock must have returned.
func (r *Redisson) Close() {
	r.deleting.Wait()
	r.rc.Close()
}

// Owner returns a new owner of this client, UUID:THREAD_ID, as a Java thread
// of its own locks under.
func (r *Redisson) Owner() string {
	return r.id + ":" + strconv.FormatInt(r.threads.Add(1), 10)
}

// Lock is RedissonLock.lock() on a thread of its own: it returns once the lock
// name is held, with the function that unlocks it, or ctx's error.
func (r *Redisson) Lock(ctx context.Context, name string) (unlock func() error, err error) {
	return r.LockAs(ctx, name, r.Owner())
}

// LockAs is Lock as owner, for a caller that must know the owner (to renew
// its lock, say).
func (r *Redisson) LockAs(ctx context.Context, name, owner string) (unlock func() error, err error) {
	if err := r.acquire(ctx, name, owner); err != nil {
		return nil, err
	}
	return func() error { return r.unlock(name, owner) }, nil
}

// TryLock is RedissonLock.tryLock(): one attempt, reporting whether it took
// the lock, with the function that unlocks it.
func (r *Redisson) TryLock(ctx context.Context, name string) (unlock func() error, held bool, err error) {
	owner := r.Owner()
	held, _, err = r.tryLock(ctx, name, owner)
	if err != nil || !held {
		return nil, false, err
	}
	return func() error { return r.unlock(name, owner) }, true, nil
}

// tryLock runs the lock script once: held, or the holder's pttl in ms (-1
// for a lock without expiry).
func (r *Redisson) tryLock(ctx context.Context, name, owner string) (held bool, pttl int64, err error) {
	pttl, err = redissonLock.Exec(ctx, r.rc, []string{name}, []string{r.lease, owner}).AsInt64()
	if rueidis.IsRedisNil(err) {
		return true, 0, nil
	}
	return false, pttl, err
}

// acquire is RedissonLock.lock: try, subscribe, then try again after each
// unlock message or pttl until held.
func (r *Redisson) acquire(ctx context.Context, name, owner string) error {
	held, _, err := r.tryLock(ctx, name, owner)
	if err != nil || held {
		return err
	}
	e, err := r.subscribe(ctx, name)
	if err != nil {
		return err
	}
	defer r.unsubscribe(name, e)
	for {
		held, pttl, err := r.tryLock(ctx, name, owner)
		if err != nil || held {
			return err
		}
		if err := e.await(ctx, pttl); err != nil {
			return err
		}
	}
}

// await waits for an unlock message, for pttl ms unless it is -1 (the lock
// has no expiry), or for ctx.
func (e *redissonEntry) await(ctx context.Context, pttl int64) error {
	var expired <-chan time.Time
	if pttl >= 0 {
		t := time.NewTimer(time.Duration(pttl) * time.Millisecond)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-e.latch:
	case <-expired:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// subscribe returns name's entry, subscribed, made by the first waiter.
func (r *Redisson) subscribe(ctx context.Context, name string) (*redissonEntry, error) {
	r.mu.Lock()
	e := r.entries[name]
	if e == nil {
		sctx, cancel := context.WithCancel(context.Background())
		e = &redissonEntry{latch: make(chan struct{}, 1024), subscribed: make(chan struct{}),
			cancel: cancel, done: make(chan struct{})}
		r.entries[name] = e
		go r.receive(sctx, e, "redisson_lock__channel:{"+name+"}")
	}
	e.refs++
	r.mu.Unlock()
	select {
	case <-e.subscribed:
		if e.err == nil {
			return e, nil
		}
		r.unsubscribe(name, e)
		return nil, e.err
	case <-ctx.Done():
		r.unsubscribe(name, e)
		return nil, ctx.Err()
	}
}

// receive holds e's subscription to channel until e is cancelled, then
// unsubscribes: rueidis leaves a channel subscribed when Receive returns.
func (r *Redisson) receive(ctx context.Context, e *redissonEntry, channel string) {
	defer close(e.done)
	var once sync.Once
	err := r.rc.Receive(rueidis.WithOnSubscriptionHook(ctx, func(s rueidis.PubSubSubscription) {
		if s.Kind == "subscribe" {
			once.Do(func() { close(e.subscribed) })
		}
	}), r.rc.B().Subscribe().Channel(channel).Build(), func(m rueidis.PubSubMessage) {
		if m.Message == redissonUnlockMessage {
			select {
			case e.latch <- struct{}{}:
			default:
			}
		}
	})
	once.Do(func() {
		e.err = fmt.Errorf("redisson: subscription to %s ended before it was confirmed: %v", channel, err)
		close(e.subscribed)
	})
	_ = r.rc.Do(context.Background(), r.rc.B().Unsubscribe().Channel(channel).Build()).Error()
}

// unsubscribe drops a waiter's use of e; the last one ends the subscription
// and waits for its UNSUBSCRIBE, so that the next SUBSCRIBE to the name comes
// after it.
func (r *Redisson) unsubscribe(name string, e *redissonEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.refs--; e.refs > 0 {
		return
	}
	delete(r.entries, name)
	e.cancel()
	<-e.done
}

// unlock runs the unlock script under a latch of its own, then deletes the
// latch without waiting (Close waits).
func (r *Redisson) unlock(name, owner string) error {
	ctx := context.Background()
	latch := fmt.Sprintf("redisson_unlock_latch:{%s}:%016x%016x", name, rand.Uint64(), rand.Uint64())
	err := redissonUnlock.Exec(ctx, r.rc, []string{name, "redisson_lock__channel:{" + name + "}", latch},
		[]string{redissonUnlockMessage, r.lease, owner, "publish", redissonLatchMillis}).Error()
	r.deleting.Go(func() { _ = r.rc.Do(ctx, r.rc.B().Del().Key(latch).Build()).Error() })
	if rueidis.IsRedisNil(err) {
		return fmt.Errorf("redisson: unlock of %s: not held by %s", name, owner)
	}
	return err
}
