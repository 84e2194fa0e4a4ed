// Package lua runs leasehold's scripts (package script) through rueidis, and
// is the one place where each lock kind's use of its keys is written: each
// kind is a Protocol whose constructor derives its keys once.
//
//	l := lua.NewLock("orders", lua.Config{Lease: 30 * time.Second})
//	g, err := l.Try(ctx, rc, owner, false) // g.Acquired, g.Token
//
// Each script runs by SHA (EVALSHA, falling back to EVAL when the server
// answers NOSCRIPT), in its sharded form (SPUBLISH) on a Sharded client.
// Package script holds the sources and the names of the keys, the layout
// that tools and other-language services share; this package is the Go
// plumbing that only leasehold's own packages call.
package lua
