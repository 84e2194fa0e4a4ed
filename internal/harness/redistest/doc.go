// Package redistest starts real redis-server processes for tests, on free
// loopback ports, and injects real faults into them: kill -9 and restart,
// SIGSTOP and SIGCONT, connections cut by a proxy. It never mocks Redis.
//
//	srv := redistest.Start(t)
//	c, err := leasehold.Open(srv.Option())
//
// Launch does the same for programs (the examples), without a test.
//
// The server binary is redis-server from PATH, or $LEASEHOLD_REDIS_SERVER
// (a Valkey or an older Redis; Version tells which). Under go test -short,
// the clusters and Sentinel deployments it starts skip their test instead.
package redistest
