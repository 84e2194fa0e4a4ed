-- rw_write_abandon: withdraw the announcement of a writer that stops waiting
-- (its ctx ended). If it was the last writer waiting, publish '1': readers
-- held back for it may enter now, and nothing else would tell them.
--
-- KEYS[1]  leasehold_rwlock_writers:{NAME}   zset of waiting writers
-- KEYS[2]  redisson_rwlock:{NAME}            unlock channel
-- ARGV[1]  OWNER:write
--
-- Returns 1 when the writer was announced, 0 when it was not.
if redis.call('zrem', KEYS[1], ARGV[1]) == 0 then
  return 0
end
local t = redis.call('time')
redis.call('zremrangebyscore', KEYS[1], '-inf', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
if redis.call('zcard', KEYS[1]) == 0 then
  redis.pcall('publish', KEYS[2], '1')
end
return 1
