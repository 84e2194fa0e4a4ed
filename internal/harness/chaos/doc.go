// Package chaos checks the safety of leasehold's locks under real faults,
// and their liveness between the faults: worker processes (the test binary
// re-executed) loop acquire, read a fenced resource, hold, write it,
// release, and record what they did on
// CLOCK_MONOTONIC, which every process on one machine shares; the tests
// inject faults (kill -9, SIGSTOP, restarts, cut and slow connections,
// paused servers, failovers, black-hole network partitions, a Sentinel
// split brain, stepped server clocks); then Check replays the records
// against the resource's log for overlaps the fence did not stop,
// CheckLinear has porcupine check that the resource's history is
// linearizable, and CheckLive that every wait outside the faults' windows
// ended within its bound (rlock's turns, fairqueue's order; WaitBound).
// Elections' observers are checked by CheckObserved. A partition group's
// members are workers too (KindPartition), a member each: every fn is a
// section of its partition, which reads and writes the partition's own
// fenced resource under the partition's lease until its ctx ends, each
// partition checked as a lock is; CheckOwned checks from the records that
// every partition runs again within a lease and a bound after each fault,
// and is never run nowhere for longer than a handover outside them.
// TestFencedResource writes through package fence to a Redis key and to a
// PostgreSQL table (internal/harness/dbtest starts it) while holders are
// stopped past their leases and killed: no stale write lands, and without
// the fence some do.
//
// It is a module of its own, so that users never download porcupine. From
// this directory, as root (partitions make network namespaces):
//
//	go test -race -count=1 .                        # short form (~4min), as CI runs it
//	go test -race -count=1 -timeout 60m -v . -long  # long form; or LEASEHOLD_CHAOS_LONG=1
//
// With -v the run ends with its figures. The package is test plumbing:
// nothing outside the tests imports it. docs/safety.md has the faults and
// the figures.
package chaos
