// Package quorum provides locks made of other locks: Multi holds all of N locks
// (Redisson's RedissonMultiLock) and RedLock holds a majority of N locks
// taken on independent Redis servers (Redisson's RedissonRedLock, the
// algorithm of redis.io's "Distributed Locks with Redis").
//
//	l, err := quorum.RedLock(rlock.New(c1, "orders"), rlock.New(c2, "orders"), rlock.New(c3, "orders")).Acquire(ctx)
//	if err != nil { return err }
//	defer l.Release(context.Background())
//
// Both return a lease.Locker whose Lease behaves like rlock's: Lost, Context,
// Err, Release, reentrancy through the context, and a fencing token that rises
// across holders. An attempt asks every member at once, and one that falls
// short gives back all it took: nothing stays half-locked. The members are
// renewed by their own Clients; the Lease is lost when those still held no
// longer make the quorum (every member for Multi, N/2+1 for RedLock), and the
// rest are then released.
//
// RedLock rests on timing assumptions (clocks slewed, never stepped; a crashed
// node kept down longer than the longest lease; tokens checked by the
// resource): read its safety limits, and how tokens and attempts work, at
// https://github.com/leasehold/leasehold/blob/main/docs/quorum.md
package quorum
