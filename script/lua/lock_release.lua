-- lock_release: give up one hold (or every hold) of OWNER on the reentrant
-- lock NAME; on full release delete NAME and publish the unlock message.
--
-- With KEEP (leasehold.WithHoldAtLeast: the release came sooner than the
-- time the lock must stay taken), a full release leaves NAME taken by no
-- holder for KEEP ms: a hash of the one field leasehold:kept -> OWNER,
-- which no owner's field can be, so every acquire script (Redisson's too)
-- finds the lock held by another and is told its PTTL, the rest of KEEP.
-- Waiters wake at its expiry as at a lease's: on the key's invalidation,
-- or at the end of the PTTL they were told. The unlock message still goes
-- out, so that a waiter timing the holder's lease (Redisson's) learns the
-- shorter PTTL at once.
--
-- Giving up one hold of several is not idempotent (a repeat would give up a
-- second), so its result is kept under a latch key for a short while: a
-- release retried after a lost reply returns the first result and never
-- releases twice (Redisson's unlock latch). Giving up every hold needs no
-- latch: a repeat finds OWNER gone and returns -1, which the caller reads as
-- success when its first try's outcome was unknown and its lease could not
-- have expired yet (see lease.Hold).
--
-- KEYS[1]  NAME
-- KEYS[2]  redisson_lock__channel:{NAME}
-- KEYS[3]  redisson_unlock_latch:{NAME}:REQUEST_ID
-- ARGV[1]  unlock message, '0'
-- ARGV[2]  lease time, ms (re-applied while holds remain)
-- ARGV[3]  OWNER
-- ARGV[4]  latch lifetime, ms
-- ARGV[5]  '1': release every hold of OWNER; '0': release one
-- ARGV[6]  KEEP, ms: how long a full release leaves the lock taken by no
--          holder; '0': free at once
--
-- Returns 1 when OWNER's last hold is given up and nobody else holds the
-- lock (free, or kept), 0 when OWNER (or another owner) still holds it,
-- -1 when OWNER did not hold it.
--
-- Calls: release all 3, release all kept 5, not held 1, one of several holds 5, last hold 5, last hold kept 7, latched 1
if ARGV[5] == '1' then
  if redis.call('hdel', KEYS[1], ARGV[3]) == 0 then
    return -1
  end
  -- An emptied hash is gone; another field would be a foreign owner's.
  if redis.call('exists', KEYS[1]) == 1 then
    return 0
  end
  if ARGV[6] ~= '0' then
    redis.call('hset', KEYS[1], 'leasehold:kept', ARGV[3])
    redis.call('pexpire', KEYS[1], ARGV[6])
  end
  redis.pcall('publish', KEYS[2], ARGV[1])
  return 1
end
local latched = redis.call('get', KEYS[3])
if latched then
  return tonumber(latched)
end
local held = redis.call('hget', KEYS[1], ARGV[3])
if not held then
  return -1
end
-- The last hold goes with the hash: no HINCRBY to 0 first. A count that is
-- not an integer fails in HINCRBY, the first write.
if held ~= '1' and redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[3], 0, 'px', ARGV[4])
  return 0
end
redis.call('del', KEYS[1])
if ARGV[6] ~= '0' then
  redis.call('hset', KEYS[1], 'leasehold:kept', ARGV[3])
  redis.call('pexpire', KEYS[1], ARGV[6])
end
redis.pcall('publish', KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[4])
return 1
