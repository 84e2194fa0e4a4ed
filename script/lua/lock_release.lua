-- lock_release: give up one hold (or every hold) of OWNER on the reentrant
-- lock NAME; on full release delete NAME and publish the unlock message.
-- The result is kept under a latch key for a short while, so a release
-- retried after a lost reply returns the first result and never releases
-- twice (Redisson's unlock latch).
--
-- KEYS[1]  NAME
-- KEYS[2]  redisson_lock__channel:{NAME}
-- KEYS[3]  redisson_unlock_latch:{NAME}:REQUEST_ID
-- ARGV[1]  unlock message, '0'
-- ARGV[2]  lease time, ms (re-applied while holds remain)
-- ARGV[3]  OWNER
-- ARGV[4]  latch lifetime, ms
-- ARGV[5]  '1': release every hold of OWNER; '0': release one
--
-- Returns 1 when the lock is now free, 0 when OWNER still holds it,
--         -1 when OWNER did not hold it.
local latched = redis.call('get', KEYS[3])
if latched then
  return tonumber(latched)
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return -1
end
local count = 0
if ARGV[5] == '0' then
  count = redis.call('hincrby', KEYS[1], ARGV[3], -1)
end
if count > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[3], 0, 'px', ARGV[4])
  return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[4])
return 1
