-- election_campaign: take the election's lock NAME for OWNER (Redisson's
-- RLock layout, as lock_acquire), draw a fencing token, and publish VALUE as
-- the leader's in the leader key, in one step; or re-enter the lock if OWNER
-- leads already, publishing VALUE.
--
-- The leader key lives and dies with OWNER's hold: it takes the same PEXPIRE
-- here, election_renew extends both, election_release deletes it. OWNER leads
-- while it holds NAME and the leader key names it: an OWNER that holds NAME
-- under a leader key that is gone (deleted by someone) or another's has had
-- its term ended, so its re-entry gives its hold up and fails.
--
-- KEYS[1]  NAME                                hash: OWNER -> hold count
-- KEYS[2]  redisson_lock_token:{NAME}          fencing counter (see lib/token.lua)
-- KEYS[3]  {NAME}:leader                       hash: value, token (the term), owner
-- KEYS[4]  leasehold_election__channel:{NAME}  where changes of the leader key are told
-- KEYS[5]  redisson_lock__channel:{NAME}       unlock channel
-- ARGV[1]  lease time, ms
-- ARGV[2]  OWNER (CLIENT_ID:LEASE_ID)
-- ARGV[3]  VALUE
-- ARGV[4]  election message, '1'
-- ARGV[5]  unlock message, '0'
--
-- Returns {1, token, hold count} when OWNER leads (token a decimal string; a
--         first campaign's token is the term, stored in the leader key),
--         {0, pttl}              when another owner holds NAME (pttl in ms,
--                                -1: no expiry), or when OWNER's term was
--                                ended under it (pttl of what is left).
-- Everything that can fail (a key of another type, a corrupt counter, a hold
-- count that is not an integer) fails before the first write, the token's
-- INCR (HDEL, when the term was ended, writes nothing that can fail after).
-- Replies are written as one string of space-separated values: see lib/reply.lua.
--
-- Calls: first campaign 9, first campaign new counter 10, re-entry 9, held by another 3
--!include reply
--!include token
--!include hold
local held = false
if redis.call('exists', KEYS[1]) == 1 then
  held = redis.call('hget', KEYS[1], ARGV[2])
  if not held then
    return reply(0, redis.call('pttl', KEYS[1]))
  end
end
local kind = redis.call('type', KEYS[3])['ok']
if kind ~= 'hash' and kind ~= 'none' then
  return redis.error_reply('WRONGTYPE leader key ' .. KEYS[3] .. ' holds a ' .. kind .. ', not a hash')
end
if held and redis.call('hget', KEYS[3], 'owner') ~= ARGV[2] then
  redis.call('hdel', KEYS[1], ARGV[2])
  if redis.call('exists', KEYS[1]) == 0 then
    redis.pcall('publish', KEYS[5], ARGV[5])
  end
  return reply(0, redis.call('pttl', KEYS[1]))
end
local err = held and hold_check(KEYS[1], ARGV[2], held)
if err then
  return redis.error_reply('ERR ' .. err)
end
-- A re-entry draws no token: its Lease fences with its hold's, the term.
local token = 0
if not held then
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
local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('pexpire', KEYS[1], ARGV[1])
if held then
  redis.call('hset', KEYS[3], 'value', ARGV[3])
else
  if kind == 'hash' then
    redis.call('del', KEYS[3])
  end
  redis.call('hset', KEYS[3], 'value', ARGV[3], 'token', token, 'owner', ARGV[2])
end
redis.call('pexpire', KEYS[3], ARGV[1])
redis.pcall('publish', KEYS[4], ARGV[4])
return reply(1, token, count)
