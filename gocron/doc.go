// Package leaseholdgocron runs gocron v2 jobs once across replicas: a
// gocron.Locker that takes, for each run, the leasehold rlock named after the
// job, and a gocron.Elector that campaigns in a leasehold election.
//
//	locker := leaseholdgocron.NewLocker(c, leasehold.WithHoldAtLeast(10*time.Second))
//	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
//
// The Locker suits a job every replica schedules; WithHoldAtLeast keeps a
// quick run from running again on the replicas whose clocks are behind. The
// Elector suits replicas that should all defer to one. docs/cron.md compares
// them, shows a plain time.Ticker with lease.TryDo, and how to choose d.
//
// Services that share a Redis and name jobs alike open their Clients with
// leasehold.WithKeyPrefix: the Locker and the Elector lock under the
// Client's prefix, so "cleanup" of one service never skips another's.
package leaseholdgocron
