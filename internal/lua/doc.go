// Package lua runs leasehold's scripts (package script) through rueidis: each
// script by SHA (EVALSHA, falling back to EVAL when the server answers
// NOSCRIPT), with its KEYS and ARGV built from a lock name and owner, and its
// reply read into a Grant or a release outcome.
//
//	g, err := lua.NewLock("orders", 30*time.Second, 5*time.Second).Acquire(ctx, rc, owner)
//	if err == nil && g.Acquired { ... }
//
// Package script holds the sources and the names of the keys, the layout
// that tools and other-language services share; this package is the Go
// plumbing that only leasehold's own packages call.
package lua
