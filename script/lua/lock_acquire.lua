-- lock_acquire: take the reentrant lock NAME for OWNER, or re-enter it if
-- OWNER already holds it, and draw a fencing token (Redisson's RLock and
-- RFencedLock layout).
--
-- KEYS[1]  NAME                        hash: OWNER -> hold count
-- KEYS[2]  redisson_lock_token:{NAME}  fencing counter (see lib/token.lua)
-- ARGV[1]  lease time, ms
-- ARGV[2]  OWNER (CLIENT_ID:LEASE_ID)
--
-- Returns {1, token, hold count} when OWNER holds the lock (token a decimal string),
--         {0, pttl}              when another owner does (pttl in ms, -1: no expiry).
-- Everything that can fail (a key of another type, a corrupt counter, a hold
-- count that is not an integer) fails before the first write, the token's
-- INCR: on a free lock nothing else can fail, and a re-entry checks the
-- count it read first.
-- Replies are written as one string of space-separated values: see lib/reply.lua.
--
-- Calls: free lock 5, free lock new counter 6, re-entry 6, held by another 3
--!include reply
--!include token
if redis.call('exists', KEYS[1]) == 0 then
  local token, err = token_draw(KEYS[2], ARGV[1])
  if not token then
    return redis.error_reply('ERR ' .. err)
  end
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return reply(1, token, 1)
end
local held = redis.call('hget', KEYS[1], ARGV[2])
if not held then
  return reply(0, redis.call('pttl', KEYS[1]))
end
-- Defined here, past the free lock's return: a run defines no function it
-- does not call.
--!include hold
local err = hold_check(KEYS[1], ARGV[2], held)
local token
if not err then
  token, err = token_draw(KEYS[2], ARGV[1])
end
if not token then
  return redis.error_reply('ERR ' .. err)
end
local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('pexpire', KEYS[1], ARGV[1])
return reply(1, token, count)
