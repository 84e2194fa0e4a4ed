-- rw_write_acquire: take the write lock of the read-write lock NAME for
-- OWNER, or re-enter it, and draw a fencing token (Redisson's
-- RedissonWriteLock layout: field OWNER:write). With writer preference a
-- writer that must wait announces itself in a zset that leasehold readers
-- honour; the entry lasts until the writer's next attempt is due, plus a
-- grace, so a writer that dies holds readers back for a bounded time only.
--
-- KEYS[1]  NAME
-- KEYS[2]  redisson_lock_token:{NAME}        fencing counter (see lib/token.lua)
-- KEYS[3]  leasehold_rwlock_writers:{NAME}   zset: waiting writers -> expiry (unix ms)
-- ARGV[1]  lease time, ms
-- ARGV[2]  OWNER:write
-- ARGV[3]  '1': announce this writer in KEYS[3] if it must wait; '0': do not
-- ARGV[4]  grace, ms: how much longer than its next attempt the announcement lasts
--
-- Returns {1, token, hold count} when OWNER holds the write lock (token a decimal string;
--                                0 for a re-entry, whose Lease fences with its hold's),
--         {0, pttl}              when another owner holds NAME (-1: no expiry).
-- Everything that can fail (a key of another type, a corrupt counter, a hold
-- count that is not an integer) fails before the first write, the token's
-- INCR: the reads come first, and a re-entry checks the count it read.
-- Replies are written as one string of space-separated values: see lib/reply.lua.
--
-- Calls: free lock 6, free lock new counter 7, re-entry 6, held by another 3, held by another announcing 7
--!include reply
--!include token
--!include hold
local fresh = redis.call('exists', KEYS[1]) == 0
local held
if not fresh then
  local f = redis.call('hmget', KEYS[1], 'mode', ARGV[2])
  held = f[1] == 'write' and f[2]
end
if fresh or held then
  local err = held and hold_check(KEYS[1], ARGV[2], held)
  if err then
    return redis.error_reply('ERR ' .. err)
  end
  -- A key of another type fails here, before the writes; a writer that
  -- announced itself while waiting withdraws.
  local announced = redis.call('zscore', KEYS[3], ARGV[2])
  -- A re-entry draws no token: its Lease fences with its hold's.
  local token = 0
  if fresh then
    local n = redis.pcall('incr', KEYS[2])
    token = nil
--!include token_fast n KEYS[2] ARGV[1]
    if not token then
      token, err = token_draw(KEYS[2], ARGV[1], nil, n)
      if not token then
        return redis.error_reply('ERR ' .. err)
      end
    end
  end
  local count = 1
  if fresh then
    redis.call('hset', KEYS[1], 'mode', 'write', ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
  else
    count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[1])))
  end
  if announced then
    redis.call('zrem', KEYS[3], ARGV[2])
  end
  return reply(1, token, count)
end
local pttl = redis.call('pttl', KEYS[1])
if ARGV[3] == '1' then
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local life = tonumber(ARGV[1])
  if pttl > 0 then
    life = pttl
  end
  life = life + tonumber(ARGV[4])
  redis.call('zadd', KEYS[3], now + life, ARGV[2])
  redis.call('pexpire', KEYS[3], math.max(redis.call('pttl', KEYS[3]), life))
end
return reply(0, pttl)
