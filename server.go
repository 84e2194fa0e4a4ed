package leasehold

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/script"
)

// inspectTimeout bounds the round trip in which Open and New read the server.
const inspectTimeout = 10 * time.Second

// server is what Open and New learn of the Redis a Client runs on, in one
// round trip: INFO and a PUBLISH of the unlock message to a channel nobody
// listens on.
type server struct {
	name      string // "redis" or "valkey"; "" when INFO was refused
	major     int    // major version of name
	role      string // "master" or "slave"
	primary   string // host:port of the primary, for a replica
	policy    string // maxmemory_policy
	maxmemory int64
	published error // the PUBLISH probe's error reply, nil when it went out
	sharded   bool  // unlock messages go by sharded pub/sub (see inspect)
}

// inspect reads rc's server and resolves the pub/sub flavour: sharded in a
// Redis Cluster of Redis 7+ or Valkey, unless classic is set. A failure to
// read INFO is an error only in Redis Cluster, where the flavour depends on
// the version; elsewhere the Client works without knowing (an ACL may deny
// INFO). The probe's channel is under the Client's key prefix, where an ACL
// confining the Client to it lets it publish.
func inspect(rc rueidis.Client, classic bool, prefix string) (server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), inspectTimeout)
	defer cancel()
	var s server
	res := rc.DoMulti(ctx, rc.B().Info().Build(), probe(rc, prefix, false))
	info, err := res[0].ToString()
	if err != nil {
		if rc.Mode() == rueidis.ClientModeCluster {
			return s, fmt.Errorf("reading the Redis version (INFO): %w", redisErr(err))
		}
		return s, nil
	}
	s = parseInfo(info)
	s.published = res[1].Error()
	if s.sharded = rc.Mode() == rueidis.ClientModeCluster && !classic && s.shardedPubSub(); s.sharded {
		// The scripts publish with SPUBLISH there: probe that instead.
		s.published = rc.Do(ctx, probe(rc, prefix, true)).Error()
	}
	if _, ok := rueidis.IsRedisErr(s.published); !ok {
		s.published = nil // a transport error says nothing of the ACL
	}
	return s, nil
}

// probe publishes "0", the unlock message, to a lock channel of a name no one
// locks (under the key prefix), as the release scripts publish.
func probe(rc rueidis.Client, prefix string, sharded bool) rueidis.Completed {
	ch := script.KeysOf(prefix + "leasehold:publish-probe").Channel
	if sharded {
		return rc.B().Spublish().Channel(ch).Message("0").Build()
	}
	return rc.B().Publish().Channel(ch).Message("0").Build()
}

// parseInfo reads the fields of INFO that a Client needs. Valkey reports a
// fixed redis_version for compatibility beside its own: server_name and
// valkey_version name what it is.
func parseInfo(info string) server {
	s := server{name: "redis"}
	var redisVersion, valkeyVersion string
	for line := range strings.Lines(info) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch k {
		case "redis_version":
			redisVersion = v
		case "valkey_version":
			valkeyVersion = v
		case "server_name":
			s.name = v
		case "role":
			s.role = v
		case "master_host":
			s.primary = v + s.primary
		case "master_port":
			s.primary += ":" + v
		case "maxmemory_policy":
			s.policy = v
		case "maxmemory":
			s.maxmemory, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	version := redisVersion
	if s.name == "valkey" && valkeyVersion != "" {
		version = valkeyVersion
	}
	major, _, _ := strings.Cut(version, ".")
	s.major, _ = strconv.Atoi(major)
	return s
}

// shardedPubSub reports whether the server has sharded pub/sub: Redis 7 and
// later, and every Valkey.
func (s server) shardedPubSub() bool {
	return s.name == "valkey" || s.major >= 7
}

// check returns an error wrapping lease.ErrRedis when the Client cannot work
// on this server, at addr, at all: a read-only replica, reached directly
// rather than through Sentinel or Redis Cluster (which lead rueidis to
// primaries). A replica that was a primary when the Client opened (a failover
// under way) is a pause instead: its READONLY replies are waited out.
func (s server) check(mode rueidis.ClientMode, addr string) error {
	if mode == rueidis.ClientModeStandalone && s.role == "slave" {
		return fmt.Errorf("%w: %s is a read-only replica (of %s): locks are taken on the primary",
			lease.ErrRedis, addr, s.primary)
	}
	return nil
}

// warnings are what the server's settings put at risk, one error each.
func (s server) warnings() []error {
	var ws []error
	if s.evicts() {
		ws = append(ws, fmt.Errorf("leasehold: maxmemory-policy %s can evict lock keys when memory fills "+
			"(lock keys have TTLs, which volatile-* policies evict first): another owner can then take a held lock; "+
			"use noeviction for the Redis that holds locks", s.policy))
	}
	if s.published != nil {
		ws = append(ws, fmt.Errorf("leasehold: PUBLISH is refused (%w): releases still free locks, "+
			"but waiters hear of them only through key invalidations and timers", s.published))
	}
	return ws
}

// evicts reports whether the memory policy can evict lock keys: any but
// noeviction, once a maxmemory is set.
func (s server) evicts() bool {
	return s.maxmemory > 0 && s.policy != "" && s.policy != "noeviction"
}

// opErr is the error of Open or New (op "open" or "new"): it reads
// "leasehold: OP: ..." and wraps err. It is no *lease.Error, which names a
// lock: the errors of a Client's making name none.
func opErr(op string, err error) error { return fmt.Errorf("leasehold: %s: %w", op, err) }

// redisErr wraps an error reply of Redis with lease.ErrRedis, as the locks'
// errors do; any other error (a cut connection, ctx's) stays as it is.
func redisErr(err error) error {
	if _, ok := rueidis.IsRedisErr(err); ok {
		return fmt.Errorf("%w: %w", lease.ErrRedis, err)
	}
	return err
}
