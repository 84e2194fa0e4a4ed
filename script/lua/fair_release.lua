-- fair_release: give up one hold (or every hold) of OWNER on the fair lock
-- NAME; on full release delete NAME and tell the head of the queue only,
-- on its own channel, rather than waking every waiter. The result is kept
-- under a latch key, so a release retried after a lost reply returns the
-- first result and never releases twice (Redisson's unlock latch).
--
-- With KEEP (leasehold.WithHoldAtLeast), a full release leaves NAME taken by
-- no holder for KEEP ms, laid out as lock_release leaves it (the one field
-- leasehold:kept -> OWNER): the head of the queue is told when that runs
-- out as when a lease does, by tell_head now if it runs out within the
-- refresh interval, else by the keeper's fair_keep round that sees it will.
--
-- KEYS[1]  NAME
-- KEYS[2]  redisson_lock_queue:{NAME}
-- KEYS[3]  redisson_lock_timeout:{NAME}
-- KEYS[4]  redisson_lock__channel:{NAME}  prefix of the per-waiter channels
-- KEYS[5]  redisson_unlock_latch:{NAME}:REQUEST_ID
-- ARGV[1]  wake-up message, '0'
-- ARGV[2]  lease time, ms (re-applied while holds remain)
-- ARGV[3]  OWNER
-- ARGV[4]  latch lifetime, ms
-- ARGV[5]  '1': release every hold of OWNER; '0': release one
-- ARGV[6]  refresh interval, ms
-- ARGV[7]  KEEP, ms: how long a full release leaves the lock taken by no
--          holder; '0': free at once
--
-- Returns 1 when OWNER's last hold is given up (the lock free, or kept),
--         0 when OWNER still holds it, -1 when OWNER did not hold it.
--
-- Calls: release all 9, release all kept 11, release all with a waiter 12, release all kept with a waiter 13, one of several holds 8, not held 8
redis.replicate_commands()
local latched = redis.call('get', KEYS[5])
if latched then
  return tonumber(latched)
end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local refresh = tonumber(ARGV[6])

-- queue_check, prune and tell_head, shared by the fair scripts: lua/lib/,
-- spliced in at load.
--!include fair_prune
--!include fair_tell_head

-- Everything that can fail fails before the first write: keys of another
-- type here; a hold count that is not an integer in HINCRBY, the first write.
queue_check(KEYS[2], KEYS[3])
local held = redis.call('hget', KEYS[1], ARGV[3])
if not held then
  -- Not held: the lease ran out first. If nobody took the lock since, this
  -- is a moment the head may not have heard of: tell it.
  if redis.call('exists', KEYS[1]) == 0 then
    prune(KEYS[2], KEYS[3], now)
    tell_head(KEYS[1], KEYS[2], KEYS[4], ARGV[1], refresh)
  end
  return -1
end
-- The last hold goes with the hash: no HINCRBY to 0 first.
local count = 0
if ARGV[5] == '0' and held ~= '1' then
  count = redis.call('hincrby', KEYS[1], ARGV[3], -1)
end
if count > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[5], 0, 'px', ARGV[4])
  return 0
end
redis.call('del', KEYS[1])
if ARGV[7] ~= '0' then
  redis.call('hset', KEYS[1], 'leasehold:kept', ARGV[3])
  redis.call('pexpire', KEYS[1], ARGV[7])
end
prune(KEYS[2], KEYS[3], now)
tell_head(KEYS[1], KEYS[2], KEYS[4], ARGV[1], refresh)
redis.call('set', KEYS[5], 1, 'px', ARGV[4])
return 1
