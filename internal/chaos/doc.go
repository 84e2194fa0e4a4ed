// Package chaos checks the safety of leasehold's locks under real faults:
// worker processes (the test binary re-executed) loop acquire, write to a
// fencing-guarded resource, release, and record what they did on
// CLOCK_MONOTONIC, which every process on one machine shares; the tests
// inject faults (kill -9, SIGSTOP, server restarts, cut and slow
// connections, paused servers, killed connections, failover of a replica);
// then Check replays the records against the resource's own log and reports
// every overlap of critical sections the fence did not stop. An election is
// one more kind: its leaders' terms are their tokens, and observer workers
// record what Observe reported, checked by CheckObserved.
//
//	go test -race -count=1 ./internal/chaos                        # short form (~75s), as CI runs it
//	go test -race -count=1 -timeout 30m -v ./internal/chaos -long  # long form (~6min); or LEASEHOLD_CHAOS_LONG=1
//
// With -v the run ends with its figures: acquisitions checked, faults
// injected by kind, overlaps found, how long before the lock's server-side
// TTL ended each lost lease was reported lost, goroutines leaked.
//
// The package is test plumbing: nothing outside the tests imports it.
package chaos
