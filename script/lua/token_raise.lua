-- token_raise: raise the fencing counter of the lock NAME to at least FLOOR,
-- never lower it, so that every later acquisition on this node draws a token
-- above FLOOR. quorum writes the token it chose back to a majority of nodes
-- with it (a quorum max-register).
--
-- KEYS[1]  redisson_lock_token:{NAME}  fencing counter (see lib/token.lua)
-- ARGV[1]  FLOOR, a decimal integer in [0, 2^63)
-- ARGV[2]  lease time, ms: the counter lives at least this long after the
--          call (it is PEXPIREd with the lock), or '' to leave its TTL
--
-- Returns the counter after the call, max(counter, FLOOR), as a decimal
-- string. The comparison is on the decimal strings, not on Lua's doubles,
-- so it is exact for every counter INCR can leave (no sign, no leading zero).
-- A counter that is not an integer is an error, and nothing is written.
local cur = redis.call('get', KEYS[1])
local floor = ARGV[1]
if cur and not string.match(cur, '^%-?%d+$') then
  return redis.error_reply('ERR fencing counter ' .. KEYS[1] .. ' holds "' .. cur .. '", not an integer')
end
local result = cur
if not cur or string.sub(cur, 1, 1) == '-' or #floor > #cur or (#floor == #cur and floor > cur) then
  redis.call('set', KEYS[1], floor)
  result = floor
end
if ARGV[2] and ARGV[2] ~= '' then
  redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[2])))
end
return result
