-- token_raise: raise the fencing counter of the lock NAME to at least FLOOR,
-- never lower it, so that every later acquisition on this node draws a token
-- above FLOOR. quorum writes the token it chose back to a majority of nodes
-- with it (a quorum max-register).
--
-- KEYS[1]  redisson_lock_token:{NAME}  fencing counter (INCR on acquire)
-- ARGV[1]  FLOOR, a decimal integer in [0, 2^63)
--
-- Returns the counter after the call, max(counter, FLOOR), as a decimal
-- string. The comparison is on the decimal strings, not on Lua's doubles,
-- so it is exact for every counter INCR can leave (no sign, no leading zero).
local cur = redis.call('get', KEYS[1])
local floor = ARGV[1]
if not cur or string.sub(cur, 1, 1) == '-' or #floor > #cur or (#floor == #cur and floor > cur) then
  redis.call('set', KEYS[1], floor)
  return floor
end
return cur
