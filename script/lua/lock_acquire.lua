-- lock_acquire: take the reentrant lock NAME for OWNER, or re-enter it if
-- OWNER already holds it (Redisson's RLock and RFencedLock layout), drawing
-- a fencing token when OWNER takes it.
--
-- KEYS[1]  NAME                        hash: OWNER -> hold count
-- KEYS[2]  redisson_lock_token:{NAME}  fencing counter (see lib/token.lua)
-- ARGV[1]  lease time, ms
-- ARGV[2]  OWNER (CLIENT_ID:LEASE_ID)
--
-- Returns the token, an integer, when OWNER takes the free lock with a
--         counter that draws by one below 2^53 (the common case),
--         {1, token, 1}     when OWNER takes it otherwise (token a decimal
--                           string),
--         {1, 0, count}     when OWNER re-enters it: no token is drawn, the
--                           re-entry's Lease fences with its hold's token
--                           (the leases of one hold are one holder),
--         {0, pttl}         when another owner holds it (pttl in ms, -1: no
--                           expiry).
-- Everything that can fail (a key of another type, a corrupt counter, a hold
-- count that is not an integer) fails before the first write, the token's
-- INCR: on a free lock nothing else can fail, and a re-entry checks the
-- count it read first.
-- Replies of several values are written as one string of space-separated
-- values: see lib/reply.lua.
--
-- The common cases come first and call no function: each function a script
-- defines is a closure Lua makes on every run that reaches its definition,
-- and a reply of one number builds no string.
--
-- Calls: free lock 5, free lock new counter 6, re-entry 4, held by another 3
local n, held, token
if redis.call('exists', KEYS[1]) == 0 then
  n = redis.pcall('incr', KEYS[2])
--!include token_fast n KEYS[2] ARGV[1]
  if token then
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return token
  end
else
  held = redis.call('hget', KEYS[1], ARGV[2])
  if not held then
    return '0 ' .. string.format('%d', redis.call('pttl', KEYS[1]))
  end
end
--!include reply
if not held then
  -- The free lock, its counter's INCR made: new (below 10^15), refused, or
  -- past 2^53.
--!include token
  local err
  token, err = token_draw(KEYS[2], ARGV[1], nil, n)
  if not token then
    return redis.error_reply('ERR ' .. err)
  end
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return reply(1, token, 1)
end
--!include hold
local err = hold_check(KEYS[1], ARGV[2], held)
if err then
  return redis.error_reply('ERR ' .. err)
end
local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('pexpire', KEYS[1], ARGV[1])
return reply(1, 0, count)
