-- semaphore_add: add DELTA permits to the semaphore NAME, DELTA < 0 to take
-- permits away (Redisson's addPermits; NAME unset counts as 0). Permits held
-- are not touched: with fewer, new takers wait until enough come back. When
-- permits were added, publish the permits available on redisson_sc:{NAME}.
--
-- KEYS[1]  NAME                 string: permits available
-- KEYS[2]  {NAME}:timeout       zset: permit id -> expiry (epoch ms)
-- KEYS[3]  redisson_sc:{NAME}   channel
-- ARGV[1]  DELTA, a decimal integer
--
-- Returns the permits available after.
-- Everything that can fail fails before the first write.
--!include semaphore
local _, _, err = semaphore_read(KEYS[1], KEYS[2])
if err then
  return redis.error_reply('ERR ' .. err)
end
local value = redis.call('incrby', KEYS[1], ARGV[1])
if tonumber(ARGV[1]) > 0 and value > 0 then
  redis.call('publish', KEYS[3], value)
end
return value
