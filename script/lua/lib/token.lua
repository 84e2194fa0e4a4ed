-- token: the fencing counter of a lock, redisson_lock_token:{NAME}. Each
-- acquisition draws counter + 1 when the counter holds a value drawn from
-- the clock (16 digits or more), and the server's TIME in microseconds
-- otherwise (no counter: a fresh name, a restart without persistence, its
-- expiry; or one too small to be ours). So tokens keep rising when the
-- counter is gone: the first is a near-timestamp, far below 2^63, above
-- every earlier token (each draw took at least a microsecond), and the next
-- go +1. It assumes the server's clock is not stepped back across a
-- restart, as key expiry does. Every draw sets the counter with this
-- acquisition's lease as its TTL, so it never outlives the last lock by
-- more than a lease. The common draw is a GET and a SET.
--
-- token_plan(key) reads the counter and may fail (a key of another type, a
-- value that is not an integer, a counter at 2^63-1): call it before the
-- script's first write. It returns the plan, or nil and an error message.
-- token_draw(key, plan, lease) writes the counter and returns the token as a
-- decimal string (exact beyond 2^53, where Lua's numbers are not).
--
-- Needs in scope: nothing but redis; the key is a parameter.

-- decimal_less compares two non-negative decimal integers without leading
-- zeros.
local function decimal_less(a, b)
  return #a < #b or (#a == #b and a < b)
end

-- decimal_incr adds one to a non-negative decimal integer without leading
-- zeros.
local function decimal_incr(s)
  local i = #s
  while i > 0 and string.byte(s, i) == 57 do -- '9'
    i = i - 1
  end
  if i == 0 then
    return '1' .. string.rep('0', #s)
  end
  return string.sub(s, 1, i - 1) .. string.char(string.byte(s, i) + 1) .. string.rep('0', #s - i)
end

local function token_plan(key)
  local cur = redis.call('get', key)
  if cur then
    if not string.match(cur, '^%-?%d+$') then
      return nil, 'fencing counter ' .. key .. ' holds "' .. cur .. '", not an integer'
    end
    cur = string.match(cur, '^0*(%d-)$') -- nil when negative
    -- A counter of 16 digits or more (10^15 us is September 2001) was
    -- drawn from a clock, or raised past one: every token drawn before
    -- it is below it, and so below counter + 1.
    if cur and #cur >= 16 then
      if not decimal_less(cur, '9223372036854775807') then
        return nil, 'fencing counter ' .. key .. ' is at ' .. cur .. ': no token above it fits in 63 bits'
      end
      return {set = decimal_incr(cur)}
    end
  end
  -- No counter, or one too small to be ours (a foreign INCR of an absent
  -- counter, a negative value): the clock, above every earlier token.
  local t = redis.call('time')
  local us = t[2]
  return {set = t[1] .. string.sub('000000', #us + 1) .. us}
end

local function token_draw(key, plan, lease)
  -- The counter's TTL becomes this lease, even if an earlier one was
  -- longer: once it is gone, the clock still keeps tokens rising.
  redis.call('set', key, plan.set, 'px', lease)
  return plan.set
end
