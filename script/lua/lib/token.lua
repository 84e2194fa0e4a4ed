-- token: the fencing counter of a lock, redisson_lock_token:{NAME}. Each
-- acquisition draws max(counter + 1, the server's TIME in microseconds), so
-- tokens keep rising when the counter is gone (a restart without
-- persistence, or its expiry): they are then near-timestamps, far below
-- 2^63, and two draws in one microsecond still differ by the +1. It assumes
-- the server's clock is not stepped back across a restart, as key expiry
-- does. The counter is PEXPIREd to at least the lease, so it never outlives
-- the last lock by more than that (after a draw from the clock, exactly the
-- lease of that acquisition).
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
  local t = redis.call('time')
  local us = t[2]
  local floor = t[1] .. string.sub('000000', #us + 1) .. us
  if not cur then
    return {set = floor}
  end
  if not string.match(cur, '^%-?%d+$') then
    return nil, 'fencing counter ' .. key .. ' holds "' .. cur .. '", not an integer'
  end
  if string.sub(cur, 1, 1) == '-' then
    return {set = floor}
  end
  cur = string.match(cur, '^0*(%d-)$')
  if cur == '' then
    cur = '0'
  end
  if decimal_less(cur, floor) then
    return {set = floor}
  end
  if not decimal_less(cur, '9223372036854775807') then
    return nil, 'fencing counter ' .. key .. ' is at ' .. cur .. ': no token above it fits in 63 bits'
  end
  -- Written as a decimal string, not INCRed: INCR refuses a value with
  -- leading zeros, which this accepts.
  return {set = decimal_incr(cur), keep = true}
end

local function token_draw(key, plan, lease)
  local ttl = lease
  if plan.keep then
    -- The counter is ahead of the clock: it keeps a longer TTL it had.
    ttl = math.max(redis.call('pttl', key), tonumber(lease))
  end
  -- In the common case, the clock ahead of the counter, the counter's TTL
  -- becomes this lease, even if an earlier one was longer: once it is gone,
  -- the clock still keeps tokens rising.
  redis.call('set', key, plan.set, 'px', ttl)
  return plan.set
end
