package bench_test

// The redisson runner: Redisson's RLock protocol (RedissonLock, Redisson
// 3.44 and later) over a plain rueidis client, as a stand-in for what the
// Redisson layout costs Redis without leasehold's fencing token. Locking,
// waiting and unlocking are redistest.Redisson's (the tests' stand-in for a
// Java service, on this runner's counted client): the scripts verbatim by
// EVALSHA, one subscription per name for its waiters, an unlock message per
// waiter let through, and an unlock that deletes its latch without waiting.
// The runner adds the watchdog of renewing: one timer for the client firing
// every lease/3 after the last round ended, renewing every held lock by
// LockTask's script, 100 locks per EVALSHA (lockWatchdogBatchSize), one batch
// after the other. Redisson before 3.44 ran renewExpirationAsync's script per
// lock instead.
//
// It is not Redisson: no Java client, no retries, no reentrancy (each call
// is a thread of its own), no lease lost or renewal cancelled.

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/internal/harness/redistest"
)

// redissonRenewScript is Redisson's LockTask renewal: KEYS are the locks,
// ARGV[1] the lease in ms and ARGV[i+1] the owner of KEYS[i].
var redissonRenewScript = rueidis.NewLuaScript("local result = {} " +
	"for i = 1, #KEYS, 1 do " +
	"if (redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1) then " +
	"redis.call('pexpire', KEYS[i], ARGV[1]); " +
	"table.insert(result, 1); " +
	"else " +
	"table.insert(result, 0); " +
	"end; " +
	"end; " +
	"return result;")

// redissonRenewBatch is Redisson's lockWatchdogBatchSize default.
const redissonRenewBatch = 100

type redissonLib struct {
	java    *redistest.Redisson
	rc      rueidis.Client // counted, commands named: the watchdog's
	counted *redistest.Counting
	cmds    sentCounts
	leaseMs string
	ttl     time.Duration

	wmu     sync.Mutex
	renewed map[string]string // name -> owner of each lock renewing holds
	stop    chan struct{}     // closed by close; nil until the watchdog starts
	stopped chan struct{}     // closed when the watchdog has ended
}

func newRedisson(tb testing.TB, addr string, ttl time.Duration) library {
	rc, err := rueidis.NewClient(leaseholdOption(addr))
	if err != nil {
		tb.Fatal(err)
	}
	r := &redissonLib{
		counted: redistest.NewCounting(rc),
		leaseMs: strconv.FormatInt(ttl.Milliseconds(), 10),
		ttl:     ttl,
		renewed: make(map[string]string),
	}
	r.rc = &naming{Client: r.counted, cmds: &r.cmds}
	r.java = redistest.NewRedissonOn(r.rc, ttl)
	return r
}

func (r *redissonLib) lock(ctx context.Context, name string) (func(), error) {
	unlock, err := r.java.Lock(ctx, name)
	if err != nil {
		return nil, err
	}
	return func() { _ = unlock() }, nil
}

// renewing holds name and has the watchdog renew it until the release.
func (r *redissonLib) renewing(ctx context.Context, name string) (func(), error) {
	owner := r.java.Owner()
	unlock, err := r.java.LockAs(ctx, name, owner)
	if err != nil {
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
		_ = unlock()
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
	r.java.Close() // waits for the latch DELs, closes the client
}
