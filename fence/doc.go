// Package fence makes a resource refuse the writes of a holder whose lease
// has ended: each write carries the lease's fencing token (lease.Token), and
// the resource applies it only if no higher token has been applied before.
//
//	err := fence.Table{Dialect: fence.Postgres}.Check(ctx, tx, "ledger", l.Token())
//	if err != nil { return err } // errors.Is(err, fence.ErrStale): a newer holder wrote; roll back
//
// Three forms: Table for SQL databases (inside the caller's transaction),
// Redis for Redis keys (a leasehold Client's Fence writes through the
// Client's connection), and Gate for an HTTP service that owns its resource.
// A token equal to the last one applied is accepted: one holder writes
// several times under one lease.
//
// When a lock needs a fence, the statements for other drivers, and what
// fencing cannot do:
// https://github.com/leasehold/leasehold/blob/main/docs/fencing.md
package fence
