-- lock_want: leave the mark of OWNER, a waiter that does not listen on the
-- reentrant lock NAME's channel (a poller, a TryAcquire loop), when another
-- owner holds NAME: OWNER is due to try again in DELAY ms. A client that
-- passes the lock among its own waiters (lock_handoff) reads the mark and,
-- before OWNER's try is due, publishes instead, and stands back until the
-- mark runs out, so that OWNER takes the lock. When OWNER holds NAME (its
-- attempt, sent just before this in the same round trip, took it), the
-- mark is done with and deleted. It is sent only by waiters that do not
-- listen: a listener is counted on the channel instead.
--
-- The mark is a string, MARGIN, with a PTTL of DELAY + MARGIN: its PTTL less
-- its value is how long until OWNER's try is due. Of two waiters, the one
-- due first keeps the mark.
--
-- KEYS[1]  NAME
-- KEYS[2]  leasehold_lock_wanted:{NAME}
-- ARGV[1]  OWNER (CLIENT_ID:LEASE_ID)
-- ARGV[2]  DELAY, ms
-- ARGV[3]  MARGIN, ms
--
-- Returns 1 when it left the mark (or one due sooner stands), 0 when OWNER
-- holds NAME or NAME is free (nothing to want).
-- Reads come first: a key of another type fails before the write.
--
-- Calls: marked 5, kept 4, holding 2, free 2
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  redis.call('del', KEYS[2])
  return 0
end
if redis.call('exists', KEYS[1]) == 0 then
  return 0
end
local delay, margin = tonumber(ARGV[2]), tonumber(ARGV[3])
local ttl = redis.call('pttl', KEYS[2])
local cur = redis.call('get', KEYS[2])
if ttl > 0 and cur and ttl - (tonumber(cur) or 0) <= delay then
  return 1
end
redis.call('set', KEYS[2], margin, 'px', delay + margin)
return 1
