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
-- count that is not an integer) fails before the first write: HINCRBY is the
-- first.
-- Replies are written as one string of space-separated values: see lib/reply.lua.
--!include reply
--!include token
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  local plan, err = token_plan(KEYS[2])
  if not plan then
    return redis.error_reply('ERR ' .. err)
  end
  local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  local token = token_draw(KEYS[2], plan, ARGV[1])
  redis.call('pexpire', KEYS[1], ARGV[1])
  return reply(1, token, count)
end
return reply(0, redis.call('pttl', KEYS[1]))
