// Package script is leasehold's layout in Redis, for tools and for services in
// other languages that share locks with Redisson and leasehold: the names of a
// lock's keys and channels, the messages published on them, and the Lua
// scripts that change them.
//
//	k := script.KeysOf("orders")
//	k.Token // redisson_lock_token:{orders}
//
// A read-write lock's write holds are the hash field OWNER:write. A lock
// released sooner than its hold-at-least (leasehold.WithHoldAtLeast) after
// its acquisition is the hash NAME with the one field leasehold:kept (the
// releasing OWNER), held by no owner until its PEXPIRE. A leasehold
// semaphore permit id is 16 raw bytes: the first 8 of the Client's UUID, the
// lease number in 6, the permit's index in its lease in 2.
package script
