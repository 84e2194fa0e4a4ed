// Package script is leasehold's layout in Redis, for tools and services in
// other languages that share its locks: the names of the keys and channels,
// the messages published on them, and the Lua scripts that change them.
//
// Key names follow Redisson's layout, so that a Go service using leasehold and
// a Java service using Redisson exclude each other on a lock name and wake each
// other up: see Prefixed and Suffixed, and each name's function.
//
//	script.TokenKey("orders")    // redisson_lock_token:{orders}
//	script.LockChannel("orders") // redisson_lock__channel:{orders}
//
// Every state change of a lock is one script, run atomically by Redis. The
// sources are embedded .lua files, each with a header naming its KEYS, its
// ARGV and its replies; Source and SHA give a script as Redis runs it (EVALSHA,
// falling back to EVAL when the server answers NOSCRIPT), and All lists them.
package script
