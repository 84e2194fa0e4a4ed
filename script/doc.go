// Package script holds leasehold's Lua scripts and the names of the Redis
// keys they touch.
//
// Every state change of a lock is one script, run atomically by Redis. The
// sources are embedded .lua files, each with a header naming its KEYS and ARGV;
// they are loaded once and run by SHA (EVALSHA, falling back to EVAL when the
// server answers NOSCRIPT).
//
//	g, err := script.AcquireLock(ctx, rc, "orders", owner, 30*time.Second)
//	if err == nil && g.Acquired { ... }
//
// Key names follow Redisson's layout so that a Go service using leasehold and
// a Java service using Redisson share a lock: see Prefixed and Suffixed.
package script
