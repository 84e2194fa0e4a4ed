// Package partition splits work across a fleet: partitions 0..n-1 of a
// group, each run by one member at a time, spread evenly over the members
// and moved only when members come and go.
//
//	g := partition.New(c, "ingest", 64)
//	err := g.Run(ctx, func(ctx context.Context, part int) error {
//		return consume(ctx, part) // while this member owns part; ctx ends when it must stop
//	})
//
// Each partition is a reentrant lock, NAME:PART, whose lease fn runs under
// (lease.FromContext, for its fencing token): a new owner's fn starts only
// once the last one's has returned or its lease ran out. Members and
// partitions are leased on the Client's watchdog: a member that dies is
// gone, and its partitions free, within that lease.
//
// How it works, the bounds measured, what it does not do:
// https://github.com/leasehold/leasehold/blob/main/docs/partition.md
package partition
