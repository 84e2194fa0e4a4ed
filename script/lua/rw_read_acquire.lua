-- rw_read_acquire: take a read hold of the read-write lock NAME for OWNER, or
-- re-enter it, and draw a fencing token (Redisson's RedissonReadLock layout).
-- Each read hold N of OWNER is a key {NAME}:OWNER:rwlock_timeout:N with its
-- own TTL, and the hash lives as long as its longest live hold.
--
-- KEYS[1]  NAME                              hash: mode, OWNER -> read holds, OWNER:write -> write holds
-- KEYS[2]  {NAME}:OWNER:rwlock_timeout       prefix of OWNER's read hold keys (:N appended)
-- KEYS[3]  redisson_lock_token:{NAME}        fencing counter (see lib/token.lua)
-- KEYS[4]  leasehold_rwlock_writers:{NAME}   zset: waiting writers -> expiry (unix ms)
-- ARGV[1]  lease time, ms
-- ARGV[2]  OWNER (CLIENT_ID:LEASE_ID)
-- ARGV[3]  the field WRITER:write of a write lease the caller holds on NAME
--          (a read under a write lease is admitted), or '' for none
--
-- Returns {1, token, hold count} when OWNER holds a read (token a decimal string),
--         {0, wait}              when it may not (wait in ms: the holder's
--                                pttl, or how long waiting writers still
--                                hold readers back; -1: no expiry).
-- Everything that can fail (a key of another type, a corrupt counter, a hold
-- count that is not an integer) fails before the first write, or in it:
-- HINCRBY on an existing count comes first.
-- Replies are written as one string of space-separated values: see lib/reply.lua.
--!include reply
--!include token
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false and redis.call('exists', KEYS[1]) == 1 then
  -- NAME is some other kind of lock (no mode field): never write into it.
  return reply(0, redis.call('pttl', KEYS[1]))
end
local mine = redis.call('hexists', KEYS[1], ARGV[2]) == 1
local plan, err = token_plan(KEYS[3])
if not plan then
  return redis.error_reply('ERR ' .. err)
end
if mode == 'write' and not mine then
  if ARGV[3] == '' or redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return reply(0, redis.call('pttl', KEYS[1]))
  end
elseif not mine then
  -- Writer preference: a new reader stands back while a writer waits. A
  -- reader that already holds is always admitted, or a nested read would
  -- deadlock with the writer waiting for it.
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('zremrangebyscore', KEYS[4], '-inf', now)
  local last = redis.call('zrange', KEYS[4], -1, -1, 'WITHSCORES')
  if #last > 0 then
    return reply(0, math.max(tonumber(last[2]) - now, 1))
  end
end
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'read') -- a new hash: HINCRBY below cannot fail
end
local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
local token = token_draw(KEYS[3], plan, ARGV[1])
redis.call('set', KEYS[2] .. ':' .. count, 1, 'px', ARGV[1])
redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[1])))
return reply(1, token, count)
