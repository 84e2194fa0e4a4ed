-- rw_write_release: give up one write hold (or every one) of OWNER on the
-- read-write lock NAME. When the last goes, reads taken under the write
-- lease keep the lock in read mode (a downgrade) for as long as the longest
-- of them lives; with none the hash is deleted. Either way '1' is published:
-- every waiting reader may now enter. The result is kept under a latch key,
-- so a release retried after a lost reply is applied once.
--
-- KEYS[1]  NAME
-- KEYS[2]  redisson_rwlock:{NAME}    unlock channel
-- KEYS[3]  redisson_unlock_latch:{NAME}:REQUEST_ID
-- KEYS[4]  {NAME}                    prefix of every owner's read hold keys
-- ARGV[1]  OWNER:write
-- ARGV[2]  lease time, ms (re-applied, at least, while holds remain)
-- ARGV[3]  latch lifetime, ms
-- ARGV[4]  '1': release every write hold of OWNER; '0': release one
--
-- Returns 1 when OWNER no longer holds the write lock, 0 when it still does,
--         -1 when it did not hold it.
--
-- Calls: release all 8, one of several holds 7, not held 2
local latched = redis.call('get', KEYS[3])
if latched then
  return tonumber(latched)
end
if redis.call('hget', KEYS[1], 'mode') ~= 'write' or redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return -1
end
local count = 0
if ARGV[4] == '0' then
  count = redis.call('hincrby', KEYS[1], ARGV[1], -1)
end
if count > 0 then
  redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[2])))
  redis.call('set', KEYS[3], 0, 'px', ARGV[3])
  return 0
end
redis.call('hdel', KEYS[1], ARGV[1])
local longest = -3
local fields = redis.call('hgetall', KEYS[1])
for i = 1, #fields, 2 do
  local n = tonumber(fields[i + 1])
  if fields[i] ~= 'mode' and n ~= nil then
    for j = n, 1, -1 do
      longest = math.max(longest, redis.call('pttl', KEYS[4] .. ':' .. fields[i] .. ':rwlock_timeout:' .. j))
    end
  end
end
if longest > 0 then
  redis.call('hset', KEYS[1], 'mode', 'read')
  redis.call('pexpire', KEYS[1], longest)
else
  redis.call('del', KEYS[1])
end
redis.pcall('publish', KEYS[2], '1')
redis.call('set', KEYS[3], 1, 'px', ARGV[3])
return 1
