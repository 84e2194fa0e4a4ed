// Package bench benchmarks leasehold against its Go peers (rueidislock,
// redsync and bsm/redislock) and a stand-in for Redisson's RLock on the same
// redis-server in the same run; it has no API. It is a module of its own so that leasehold's users never
// download the peers:
//
//	cd bench && go test -run '^$' -bench . -count 5 .   # bench.sh runs it all
//
// It uses the tests' harness (internal/harness/redistest, internal/harness/locktest): Go lets
// any package under github.com/leasehold/leasehold import those, a nested
// module's too. Internal packages make no promise from one version to the
// next, which is why this module is never released and is built against the
// checkout it sits in (the replace in its go.mod).
//
// Example_goRedis lives here for the same reason: it shows a go-redis service
// taking leasehold's locks, and only this module may require go-redis.
package bench
