-- semaphore_release: give back the N permits of one lease of the semaphore
-- NAME (lib/semaphore.lua), and publish the permits then available on
-- redisson_sc:{NAME}, as Redisson's release does: its waiters read the
-- message as a count and wake that many.
--
-- Idempotent without a latch: a repeat finds the permits gone and returns
-- -1, which the caller reads as success when its first try's outcome was
-- unknown and its lease could not have expired yet (see lease.Hold).
--
-- KEYS[1]  NAME                 string: permits available
-- KEYS[2]  {NAME}:timeout       zset: permit id -> expiry (epoch ms)
-- KEYS[3]  redisson_sc:{NAME}   channel
-- ARGV[1]  the lease's permit id prefix, 14 bytes
-- ARGV[2]  N, the lease's permits
--
-- Returns 1 when every permit of the lease was held and is given back, -1
-- when some were not (expired and given back by another's attempt, or
-- removed by an operator): those still held are given back all the same.
-- Everything that can fail fails before the first write.
--
-- Calls: one permit 5, 3 permits 5, not held 3
--!include semaphore
local _, _, err = semaphore_read(KEYS[1], KEYS[2])
if err then
  return redis.error_reply('ERR ' .. err)
end
local n = tonumber(ARGV[2])
local removed = permits_call('zrem', KEYS[2], ARGV[1], n)
if removed > 0 then
  local value = redis.call('incrby', KEYS[1], removed)
  if value > 0 then
    redis.pcall('publish', KEYS[3], value)
  end
end
if removed < n then
  return -1
end
return 1
