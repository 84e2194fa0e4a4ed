// Package election elects one leader among many processes on a lock in
// Redis, as etcd's concurrency.Election does on etcd: Campaign, Proclaim,
// Leader, Observe, and Release of the leadership's lease to resign.
//
//	ls, err := election.New(c, "scheduler").Campaign(ctx, "10.0.0.7:8080")
//	if err != nil { return err }
//	defer ls.Release(context.Background()) // resign
//
// The leadership is a lease of the lock NAME, on Redisson's RLock layout (as
// package rlock), so a Redisson RLock of the same name excludes campaigners
// and is excluded by a leader. The leader's value lives in a key of its own,
// {NAME}:leader (value, term, owner), written in the same script that takes
// the lock, renewed with it and deleted when it is released; every change of
// it is told on leasehold_election__channel:{NAME}. All of an election's
// keys lie in its lock's Redis Cluster slot, and none is left when nobody
// leads. See docs/election.md for the etcd and client-go names mapped to
// these.
package election
