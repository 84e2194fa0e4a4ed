-- semaphore_set: set the permits of the semaphore NAME if it was never set
-- (Redisson's trySetPermits), and publish them on redisson_sc:{NAME}: the
-- waiters of a semaphore that was not set yet may go.
--
-- KEYS[1]  NAME                 string: permits available
-- KEYS[2]  redisson_sc:{NAME}   channel
-- ARGV[1]  permits, a decimal integer >= 0
--
-- Returns 1 when NAME was set, 0 when it was set already (left as it is).
-- A key of another type fails before the first write.
if redis.call('get', KEYS[1]) then
  return 0
end
redis.call('set', KEYS[1], ARGV[1])
if tonumber(ARGV[1]) > 0 then
  redis.pcall('publish', KEYS[2], ARGV[1])
end
return 1
