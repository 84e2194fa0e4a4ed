-- election_release: give up one hold (or every hold) of OWNER on the
-- election's lock NAME, as lock_release does; when OWNER's last hold goes,
-- its term ends: the leader key is deleted with NAME, the election is told,
-- and the unlock message wakes the next campaigner (and Redisson's waiters).
--
-- The leader key is read with redis.pcall: one of another type (someone
-- else's) is not OWNER's and is left alone, and never keeps OWNER from
-- releasing.
--
-- KEYS[1]  NAME
-- KEYS[2]  redisson_lock__channel:{NAME}
-- KEYS[3]  redisson_unlock_latch:{NAME}:REQUEST_ID
-- KEYS[4]  {NAME}:leader
-- KEYS[5]  leasehold_election__channel:{NAME}
-- ARGV[1]  unlock message, '0'
-- ARGV[2]  lease time, ms (re-applied to NAME and the leader key while holds remain)
-- ARGV[3]  OWNER
-- ARGV[4]  latch lifetime, ms
-- ARGV[5]  '1': release every hold of OWNER; '0': release one
-- ARGV[6]  election message, '1'
--
-- Returns 1 when the lock is now free, 0 when OWNER (or another owner) still
-- holds it, -1 when OWNER did not hold it (a leader key of OWNER's left
-- behind is deleted all the same).
--
-- Calls: release all 6, one of several holds 7, not held 2
local mine = redis.pcall('hget', KEYS[4], 'owner') == ARGV[3]
local function resign()
  if mine then
    redis.call('del', KEYS[4])
    redis.pcall('publish', KEYS[5], ARGV[6])
  end
end
if ARGV[5] == '1' then
  if redis.call('hdel', KEYS[1], ARGV[3]) == 0 then
    resign()
    return -1
  end
  resign()
  -- An emptied hash is gone; another field would be a foreign owner's.
  if redis.call('exists', KEYS[1]) == 1 then
    return 0
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
  resign()
  return -1
end
-- The last hold goes with the hash: no HINCRBY to 0 first.
if held ~= '1' and redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  if mine then
    redis.call('pexpire', KEYS[4], ARGV[2])
  end
  redis.call('set', KEYS[3], 0, 'px', ARGV[4])
  return 0
end
redis.call('del', KEYS[1])
resign()
redis.pcall('publish', KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[4])
return 1
