package bench_test

// The redisson runner: Redisson's RLock protocol (RedissonLock, Redisson
// 3.44 and later) over a plain rueidis client, as a stand-in for what the
// Redisson layout costs Redis without leasehold's fencing token. It sends
// what RedissonLock sends, the scripts verbatim (internal/harness/redistest), by
// EVALSHA as Redisson's script cache does:
//
//   - lock: the lock script on NAME with a 30s lease and the owner
//     UUID:THREAD_ID, where THREAD_ID is drawn anew for each lock call, as
//     each Java thread has its own;
//   - waiting: one SUBSCRIBE to redisson_lock__channel:{NAME} per name, shared
//     by the client's waiters on it and dropped by the last to leave; an
//     unlock message lets one waiter try again (Redisson's latch is a
//     semaphore released once per message), and a waiter that hears nothing
//     tries again after the pttl the lock script returned;
//   - unlock: the unlock script, which publishes the unlock message and sets
//     the unlock latch redisson_unlock_latch:{NAME}:REQUEST_ID, then a DEL of
//     the latch that the caller does not wait for;
//   - renewing: the watchdog, one timer for the client firing every lease/3
//     after the last round ended, renewing every held lock by
//     LockTask's script, 100 locks per EVALSHA (lockWatchdogBatchSize), one
//     batch after the other. Redisson before 3.44 ran renewExpirationAsync's
//     script per lock instead.
//
// It is not Redisson: no Java client, no retries, no reentrancy (each call
// is a thread of its own), no lease lost or renewal cancelled.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/harness/redistest"
)

var (
	redissonLockScript   = rueidis.NewLuaScript(redistest.RedissonLockScript)
	redissonUnlockScript = rueidis.NewLuaScript(redistest.RedissonUnlockScript)
	// redissonRenewScript is Redisson's LockTask renewal: KEYS are the locks,
	// ARGV[1] the lease in ms and ARGV[i+1] the owner of KEYS[i].
	redissonRenewScript = rueidis.NewLuaScript("local result = {} " +
		"for i = 1, #KEYS, 1 do " +
		"if (redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1) then " +
		"redis.call('pexpire', KEYS[i], ARGV[1]); " +
		"table.insert(result, 1); " +
		"else " +
		"table.insert(result, 0); " +
		"end; " +
		"end; " +
		"return result;")
)

const (
	// redissonRenewBatch is Redisson's lockWatchdogBatchSize default.
	redissonRenewBatch = 100
	// redissonLatchMillis is the unlock latch's life: Redisson's default
	// (timeout 3s + retry delay up to 2s) x 4 attempts.
	redissonLatchMillis = "20000"
	// redissonUnlockMessage is LockPubSub.UNLOCK_MESSAGE.
	redissonUnlockMessage = "0"
)

type redissonLib struct {
	rc       rueidis.Client // counted, commands named
	counted  *redistest.Counting
	cmds     sentCounts
	id       string // the client's UUID, the owner's prefix
	threads  atomic.Int64
	leaseMs  string
	ttl      time.Duration
	deleting sync.WaitGroup // the latch DELs in flight

	mu      sync.Mutex
	entries map[string]*redissonEntry // subscriptions, by lock name

	wmu     sync.Mutex
	renewed map[string]string // name -> owner of each lock renewing holds
	stop    chan struct{}     // closed by close; nil until the watchdog starts
	stopped chan struct{}     // closed when the watchdog has ended
}

// redissonEntry is one name's subscription and its latch, as Redisson's
// RedissonLockEntry.
type redissonEntry struct {
	refs       int           // waiters using it, under redissonLib.mu
	latch      chan struct{} // a permit per unlock message, up to its capacity
	subscribed chan struct{} // closed when SUBSCRIBE is confirmed or Receive failed
	err        error         // why Receive ended before subscribing; read after subscribed
	cancel     context.CancelFunc
	done       chan struct{} // closed when the subscription is gone
}

func newRedisson(tb testing.TB, addr string, ttl time.Duration) library {
	rc, err := rueidis.NewClient(leaseholdOption(addr))
	if err != nil {
		tb.Fatal(err)
	}
	r := &redissonLib{
		counted: redistest.NewCounting(rc),
		id: fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rand.Uint32(), rand.Uint32N(1<<16),
			rand.Uint32N(1<<12), rand.Uint32N(1<<12), rand.Uint64N(1<<48)),
		leaseMs: strconv.FormatInt(ttl.Milliseconds(), 10),
		ttl:     ttl,
		entries: make(map[string]*redissonEntry),
		renewed: make(map[string]string),
	}
	r.rc = &naming{Client: r.counted, cmds: &r.cmds}
	return r
}

func (r *redissonLib) lock(ctx context.Context, name string) (func(), error) {
	owner := r.id + ":" + strconv.FormatInt(r.threads.Add(1), 10)
	if err := r.acquire(ctx, name, owner); err != nil {
		return nil, err
	}
	return func() { r.unlock(name, owner) }, nil
}

// tryLock runs the lock script once: held, or the holder's pttl in ms (-1
// for a lock without expiry).
func (r *redissonLib) tryLock(ctx context.Context, name, owner string) (held bool, pttl int64, err error) {
	pttl, err = redissonLockScript.Exec(ctx, r.rc, []string{name}, []string{r.leaseMs, owner}).AsInt64()
	if rueidis.IsRedisNil(err) {
		return true, 0, nil
	}
	return false, pttl, err
}

// acquire is RedissonLock.lock: try, subscribe, then try again after each
// unlock message or pttl until held.
func (r *redissonLib) acquire(ctx context.Context, name, owner string) error {
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
		if err := r.await(ctx, e, pttl); err != nil {
			return err
		}
	}
}

// await waits for an unlock message, for pttl ms unless it is -1 (the lock
// has no expiry), or for ctx.
func (r *redissonLib) await(ctx context.Context, e *redissonEntry, pttl int64) error {
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
func (r *redissonLib) subscribe(ctx context.Context, name string) (*redissonEntry, error) {
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
func (r *redissonLib) receive(ctx context.Context, e *redissonEntry, channel string) {
	defer close(e.done)
	var once sync.Once
	confirmed := func() { once.Do(func() { close(e.subscribed) }) }
	err := r.rc.Receive(rueidis.WithOnSubscriptionHook(ctx, func(s rueidis.PubSubSubscription) {
		if s.Kind == "subscribe" {
			confirmed()
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
		e.err = err
		if err == nil || ctx.Err() != nil {
			e.err = fmt.Errorf("redisson: subscription to %s ended before it was confirmed: %v", channel, err)
		}
		close(e.subscribed)
	})
	_ = r.rc.Do(context.Background(), r.rc.B().Unsubscribe().Channel(channel).Build()).Error()
}

// unsubscribe drops a waiter's use of e; the last one ends the subscription
// and waits for its UNSUBSCRIBE, so that the next SUBSCRIBE to the name comes
// after it.
func (r *redissonLib) unsubscribe(name string, e *redissonEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.refs--; e.refs > 0 {
		return
	}
	delete(r.entries, name)
	e.cancel()
	<-e.done
}

// unlock runs the unlock script, then deletes the latch without waiting,
// as RedissonBaseLock.unlockInnerAsync does.
func (r *redissonLib) unlock(name, owner string) {
	ctx := context.Background()
	latch := fmt.Sprintf("redisson_unlock_latch:{%s}:%016x%016x", name, rand.Uint64(), rand.Uint64())
	_ = redissonUnlockScript.Exec(ctx, r.rc, []string{name, "redisson_lock__channel:{" + name + "}", latch},
		[]string{redissonUnlockMessage, r.leaseMs, owner, "publish", redissonLatchMillis}).Error()
	r.deleting.Go(func() { _ = r.rc.Do(ctx, r.rc.B().Del().Key(latch).Build()).Error() })
}

// renewing holds name and has the watchdog renew it until the release.
func (r *redissonLib) renewing(ctx context.Context, name string) (func(), error) {
	owner := r.id + ":" + strconv.FormatInt(r.threads.Add(1), 10)
	if err := r.acquire(ctx, name, owner); err != nil {
		return nil, err
	}
	r.wmu.Lock()
	r.renewed[name] = owner
	if r.stop == nil {
		r.stop, r.stopped = make(chan struct{}), make(chan struct{})
		go r.watchdog()
	}
	r.wmu.Unlock()
	return func() {
		r.wmu.Lock()
		delete(r.renewed, name)
		r.wmu.Unlock()
		r.unlock(name, owner)
	}, nil
}

// watchdog renews every renewed lock a third of the lease after its last
// round ended, until close.
func (r *redissonLib) watchdog() {
	defer close(r.stopped)
	t := time.NewTimer(r.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		r.renewAll()
		t.Reset(r.ttl / 3)
	}
}

// renewAll runs the renewal script on the renewed locks, a batch at a time.
func (r *redissonLib) renewAll() {
	r.wmu.Lock()
	names := make([]string, 0, len(r.renewed))
	owners := make([]string, 0, len(r.renewed))
	for name, owner := range r.renewed {
		names, owners = append(names, name), append(owners, owner)
	}
	r.wmu.Unlock()
	for i := 0; i < len(names); i += redissonRenewBatch {
		j := min(i+redissonRenewBatch, len(names))
		args := append([]string{r.leaseMs}, owners[i:j]...)
		_ = redissonRenewScript.Exec(context.Background(), r.rc, names[i:j], args).Error()
	}
}

func (r *redissonLib) rounds() int64          { return r.counted.Rounds() }
func (r *redissonLib) sent() map[string]int64 { return r.cmds.snapshot() }

func (r *redissonLib) close() {
	r.wmu.Lock()
	stop, stopped := r.stop, r.stopped
	r.wmu.Unlock()
	if stop != nil { // not under wmu: a renewal round takes it
		close(stop)
		<-stopped
	}
	r.deleting.Wait()
	r.counted.Client.Close()
}
