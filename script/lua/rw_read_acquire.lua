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
-- Returns {1, token, hold count} when OWNER holds a read (token a decimal string;
--                                0 for a re-entry, whose Lease fences with its hold's),
--         {0, wait}              when it may not (wait in ms: the holder's
--                                pttl, or how long waiting writers still
--                                hold readers back; -1: no expiry).
-- Everything that can fail (a key of another type, a corrupt counter, a hold
-- count that is not an integer) fails before the first write, the token's
-- INCR: the reads come first, and a re-entry checks the count it read.
-- Replies are written as one string of space-separated values: see lib/reply.lua.
--
-- Calls: free lock 7, free lock new counter 8, joining readers 9, re-entry 6, held by a writer 3, writer waiting 4
--!include reply
--!include token
--!include hold
local mode, mine = false, false
if redis.call('exists', KEYS[1]) == 1 then
  local f = redis.call('hmget', KEYS[1], 'mode', ARGV[2], ARGV[3])
  mode, mine = f[1], f[2]
  if mode == false then
    -- NAME is some other kind of lock (no mode field): never write into it.
    return reply(0, redis.call('pttl', KEYS[1]))
  end
  if mode == 'write' and not mine and (ARGV[3] == '' or not f[3]) then
    return reply(0, redis.call('pttl', KEYS[1]))
  end
end
local err = mine and hold_check(KEYS[1], ARGV[2], mine)
if err then
  return redis.error_reply('ERR ' .. err)
end
local t
if not mine and mode ~= 'write' then
  -- Writer preference: a new reader stands back while a writer waits. A
  -- reader that already holds is always admitted, or a nested read would
  -- deadlock with the writer waiting for it. The announcement that lasts
  -- longest is the last; an expired one is no one waiting. A key of another
  -- type fails here, before the writes.
  local last = redis.call('zrange', KEYS[4], -1, -1, 'WITHSCORES')
  if #last > 0 then
    t = redis.call('time')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    if tonumber(last[2]) > now then
      return reply(0, tonumber(last[2]) - now)
    end
  end
end
-- A re-entry draws no token: its Lease fences with its hold's.
local token = 0
if not mine then
  local n = redis.pcall('incr', KEYS[3])
  token = nil
--!include token_fast n KEYS[3] ARGV[1]
  if not token then
    token, err = token_draw(KEYS[3], ARGV[1], t, n)
    if not token then
      return redis.error_reply('ERR ' .. err)
    end
  end
end
local count = 1
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'read', ARGV[2], 1)
else
  count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
end
redis.call('set', KEYS[2] .. ':' .. count, 1, 'px', ARGV[1])
if mode == false then
  redis.call('pexpire', KEYS[1], ARGV[1])
else
  redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[1])))
end
return reply(1, token, count)
