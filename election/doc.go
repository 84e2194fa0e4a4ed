// Package election elects one leader among many processes on a lock in
// Redis, as etcd's concurrency.Election does on etcd: Campaign, Proclaim,
// Leader, Observe, and Release of the leadership's lease to resign.
//
//	ls, err := election.New(c, "scheduler").Campaign(ctx, "10.0.0.7:8080")
//	if err != nil { return err }
//	defer ls.Release(context.Background()) // resign
//
// The leadership is a lease of the lock NAME, on rlock's layout (Redisson's
// RLock), so a Redisson RLock of the same name excludes campaigners; its Token
// is the term. The leader's value lives in {NAME}:leader, written, renewed and
// deleted with the lock, and each change of it is published. Campaigners and
// observers never poll, and nothing is left in Redis when nobody leads.
//
// Keys, wake-ups, and the etcd and client-go names mapped to these:
// https://github.com/leasehold/leasehold/blob/main/docs/election.md
package election
