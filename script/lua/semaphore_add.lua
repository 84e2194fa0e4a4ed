-- semaphore_add: add DELTA permits to the semaphore NAME, DELTA < 0 to take
-- permits away (Redisson's addPermits; NAME unset counts as 0). Permits held
-- are not touched: with fewer, new takers wait until enough come back. When
-- permits were added, publish the permits available on redisson_sc:{NAME}.
--
-- KEYS[1]  NAME                 string: permits available
-- KEYS[2]  {NAME}:timeout       zset: permit id -> expiry (epoch ms)
-- KEYS[3]  redisson_sc:{NAME}   channel
-- ARGV[1]  DELTA, a decimal integer from -(2^53 - 1) to 2^53 - 1
--
-- Returns {1, permits available after} when they were added,
--         {0, permits available}       when NAME would then hold more than
--                                      2^53 - 1 either way (semaphore_max):
--                                      nothing is written.
-- Everything that can fail fails before the first write.
-- Replies are written as one string of space-separated values: see lib/reply.lua.
--!include reply
--!include semaphore
local available, _, err = semaphore_read(KEYS[1], KEYS[2])
if err then
  return redis.error_reply('ERR ' .. err)
end
available = available or 0
-- Each term is within semaphore_max, so a sum beyond it reads as a double
-- of at least 2^53: the comparison is exact.
if math.abs(available + tonumber(ARGV[1])) > semaphore_max then
  return reply(0, available)
end
local value = redis.call('incrby', KEYS[1], ARGV[1])
if tonumber(ARGV[1]) > 0 and value > 0 then
  redis.pcall('publish', KEYS[3], value)
end
return reply(1, value)
