package leasehold

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/leasehold/leasehold/internal/core"
	"github.com/leasehold/leasehold/lease"
)

// defaultWatchdog is the lease a watchdog keeps renewing when WithWatchdog
// is not given, as Redisson's lockWatchdogTimeout.
const defaultWatchdog = 30 * time.Second

// An Option configures a Client in Open or New.
type Option interface{ apply(*options) }

type options struct {
	core.Options        // what the Client's locks read
	classic      bool   // classic pub/sub in Redis Cluster too
	name         string // WithClientName's, or defaultName
	err          error
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// minLease is the shortest lease WithWatchdog and WithLeaseTime accept. A
// holder's local deadline comes lease/50 + 2ms before the lease runs out in
// Redis, counted from when the acquisition was sent: a lease of a few
// milliseconds would be lost before its acquisition returned.
const minLease = 10 * time.Millisecond

// WithWatchdog sets the lease of locks taken without WithLeaseTime: the
// watchdog renews it every d/3 while the holder holds the lock, and it runs
// out d after the holder's process dies. d must be at least 10ms.
// Default: 30s.
func WithWatchdog(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d < minLease {
			// Below it the keeper's tick, d/3, would be 0 or a busy loop.
			o.err = fmt.Errorf("%w: watchdog %v is shorter than %v", lease.ErrInvalid, d, minLease)
			return
		}
		o.Watchdog = d
	})
}

// WithObserver has o hear of every lease of the Client (acquired, renewed,
// released, lost) and of its warnings; o.Observe must not block. Default:
// none, and warnings go to slog.Default.
func WithObserver(o lease.Observer) Option {
	return optionFunc(func(opts *options) { opts.Observer = o })
}

// WithReplicas makes every acquisition and watchdog renewal wait until n
// replicas have acknowledged it (WAIT, for at most timeout), so that a
// failover keeps the lock. An acquisition fewer acknowledge is released and
// fails wrapping lease.ErrNotReplicated; a renewal round fewer acknowledge
// confirms no lease. Costs and Cluster: docs/cluster-sentinel.md. Default:
// 0, no waiting.
func WithReplicas(n int, timeout time.Duration) Option {
	return optionFunc(func(o *options) {
		switch {
		case n < 0:
			o.err = fmt.Errorf("%w: %d replicas is negative", lease.ErrInvalid, n)
		case n > 0 && timeout <= 0:
			// WAIT with timeout 0 blocks for ever.
			o.err = fmt.Errorf("%w: replica timeout %v is not positive", lease.ErrInvalid, timeout)
		default:
			o.Replicas, o.ReplicaTimeout = n, timeout
		}
	})
}

func resolve(opts []Option) (options, error) {
	o := options{Options: core.Options{Watchdog: defaultWatchdog}, name: defaultName()}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	return o, o.err
}

// WithClassicPubSub keeps classic pub/sub for unlock messages in Redis
// Cluster, for Redisson set to subscribe the classic way. Default: sharded
// pub/sub in Redis Cluster on Redis 7+, as Redisson's default there.
func WithClassicPubSub() Option {
	return optionFunc(func(o *options) { o.classic = true })
}

// WithClientName names the connections Open makes NAME/ID (ID the Client's),
// so that CLIENT LIST and `leasehold inspect` show which process holds what;
// printable ASCII without spaces. Default: HOST:PID.
func WithClientName(name string) Option {
	return optionFunc(func(o *options) {
		if name == "" || strings.IndexFunc(name, badNameRune) >= 0 {
			o.err = fmt.Errorf("%w: client name %q: Redis takes printable ASCII without spaces", lease.ErrInvalid, name)
			return
		}
		o.name = name
	})
}

// badNameRune reports whether Redis refuses r in a connection name.
func badNameRune(r rune) bool { return r < '!' || r > '~' }

// defaultName is HOST:PID, with what Redis refuses in a name replaced by _.
func defaultName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	host = strings.Map(func(r rune) rune {
		if badNameRune(r) {
			return '_'
		}
		return r
	}, host)
	return host + ":" + strconv.Itoa(os.Getpid())
}

// A LockOption configures one lock. One of another kind (WithQueueTimeout
// to an rlock) fails the lock's first call with lease.ErrInvalid.
type LockOption struct {
	// o is the option, and LockOption's only field: the lock kinds read
	// a []LockOption as the options' (internal/clientcore).
	o core.LockOption
}

// WithLeaseTime sets a fixed lease with no watchdog: the lock expires d
// after it was taken unless released (Redisson's lock(leaseTime)); d >=
// 10ms. Default: the watchdog's, 30s.
func WithLeaseTime(d time.Duration) LockOption {
	return LockOption{core.NewLockOption("leasehold.WithLeaseTime", 0, func(c *core.LockConfig) {
		if d < minLease {
			c.Err = fmt.Errorf("%w: lease time %v is shorter than %v", lease.ErrInvalid, d, minLease)
			return
		}
		c.LeaseTime = d
	})}
}

// WithHoldAtLeast keeps a lock released sooner than d after its acquisition
// taken, by no holder, until then (ShedLock's lockAtLeastFor), so that
// replicas running a job on schedules less than d apart run it once. d is
// counted on the acquirer's monotonic clock. rlock and fairqueue only; how
// to choose d: docs/cron.md. Default: none.
func WithHoldAtLeast(d time.Duration) LockOption {
	return LockOption{core.NewLockOption("leasehold.WithHoldAtLeast", core.TakesHoldAtLeast, func(c *core.LockConfig) {
		if d <= 0 {
			c.Err = fmt.Errorf("%w: hold-at-least %v is not positive", lease.ErrInvalid, d)
			return
		}
		c.HoldAtLeast = d
	})}
}

// WithQueueTimeout sets how long a fair lock's waiter that vanished keeps
// its place; live waiters' places are kept for them. fairqueue only.
// Default: 5s (Redisson's threadWaitTime).
func WithQueueTimeout(d time.Duration) LockOption {
	return LockOption{core.NewLockOption("leasehold.WithQueueTimeout", core.TakesQueueTimeout, func(c *core.LockConfig) {
		if d <= 0 {
			c.Err = fmt.Errorf("%w: queue timeout %v is not positive", lease.ErrInvalid, d)
			return
		}
		c.QueueTimeout = d
	})}
}

// WithWriterPreference makes a read-write lock (rw) hold back new readers
// while a writer waits, so a stream of readers cannot starve writers. Only
// rw takes it. Default: no preference, as Redisson.
func WithWriterPreference() LockOption {
	return LockOption{core.NewLockOption("leasehold.WithWriterPreference", core.TakesWriterPreference,
		func(c *core.LockConfig) { c.WriterPreference = true })}
}

// WithKeyPrefix puts prefix before every lock name of the Client in Redis:
// the lock "cleanup" is the key prefix+"cleanup", and every key, channel and
// fencing counter is derived from that (Redisson's NameMapper, so a Redisson
// client with the same mapping shares the locks). Leases, errors and
// observer events keep the name the caller gave. An ACL can confine the
// Client to its prefix: docs/safety.md. The prefix may not hold braces (they
// would move the lock's keys out of its Cluster slot and its ACL patterns),
// glob characters (* ? [ ] \), spaces or control characters. Default: "",
// names used as given.
func WithKeyPrefix(prefix string) Option {
	return optionFunc(func(o *options) {
		if i := strings.IndexFunc(prefix, badPrefixRune); i >= 0 {
			r, _ := utf8.DecodeRuneInString(prefix[i:])
			o.err = fmt.Errorf("%w: key prefix %q holds %q: braces, glob characters (* ? [ ] \\), "+
				"spaces and control characters are refused", lease.ErrInvalid, prefix, r)
			return
		}
		o.KeyPrefix = prefix
	})
}

// badPrefixRune reports whether WithKeyPrefix refuses r: a brace would make
// or break the hash tag of the keys derived from a name, a glob character
// would make an ACL pattern PREFIX* match keys of other prefixes, and a
// space or control character cannot be written in an ACL rule.
func badPrefixRune(r rune) bool {
	return strings.ContainsRune("{}*?[]\\", r) || unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError
}
