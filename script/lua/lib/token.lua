-- token: the fencing counter of a lock, redisson_lock_token:{NAME}, which
-- Redisson's RFencedLock INCRs. A draw INCRs it too. A counter that no draw
-- from the clock left (new, Redisson's own small one, negative) is set to the
-- server's TIME in microseconds instead, a near-timestamp: every reading of
-- a µs clock since 2001 is above 10^15, so a counter below that came from no
-- clock. Tokens thus rise by one per draw while the counter lives, and when
-- it is gone (its expiry, a restart without persistence) they start again
-- from the clock, above every token drawn from it before: a counter set from
-- the clock and raised by one per draw stays behind the clock, since a draw
-- is a script run and Redis runs fewer than one a microsecond. It assumes the
-- server's clock is not stepped back across a restart, as key expiry does.
--
-- The counter is PEXPIREd with the lease at every draw, so it lives while the
-- lock is used (a Redisson INCR between two draws finds it) and never
-- outlives the last acquisition by more than its lease. Its expiry is safe
-- for a counter behind the clock. One ahead of it (raised by quorum, a clock
-- stepped back, a failover to a replica whose clock is behind) must outlive
-- every token drawn from it: it does while it is drawn from, for the lease of
-- the last draw, so locks of one name should share one lease time.
--
-- token_draw(key, lease, t, n) draws a token from the counter key whose
-- INCR, made with redis.pcall, replied n, when lib/token_fast.lua did not:
-- it returns the token as a decimal string (exact beyond 2^53, where Lua's
-- numbers are not), or nil and an error message when the counter cannot
-- give one (a value that is not an integer, a counter at 2^63-1); a key of
-- another type raises WRONGTYPE. Every script INCRs first and runs
-- token_fast on the reply, so that the common case defines no function:
-- call both after everything else that can fail and before any other
-- write. t is the reply of TIME if the script read it already, else nil.
--
-- token_check (lib/token_check.lua, included after this) checks a counter
-- before a draw, for a script that must write before it knows whether it
-- draws.
--
-- Every script that includes this runs its function definitions each time:
-- each is a closure Lua makes, and collects, per run. So what a counter
-- INCR refuses needs (decimal arithmetic, the error messages) is made inside
-- token_odd, only when it runs.
--
-- Needs in scope: nothing but redis; the key is a parameter.

-- token_odd reads cur, a counter INCR refused without writing (one it does
-- not read as an integer, or one at 2^63-1), and returns why a draw fails on
-- it. A value with leading zeros or a '-0' is still a counter: with lease
-- set, it then draws from it, writing the token as a decimal string, and
-- returns it; without, it returns nil and no error.
local function token_odd(key, cur, lease, t)
  -- decimal_less compares two non-negative decimal integers without
  -- leading zeros.
  local function decimal_less(a, b)
    return #a < #b or (#a == #b and a < b)
  end
  if not string.match(cur, '^%-?%d+$') then
    return nil, 'fencing counter ' .. key .. ' holds "' .. cur .. '", not an integer'
  end
  local negative = string.sub(cur, 1, 1) == '-'
  if not negative then
    cur = string.match(cur, '^0*(%d-)$')
    if cur == '' then
      cur = '0'
    end
    if not decimal_less(cur, '9223372036854775807') then
      return nil, 'fencing counter ' .. key .. ' is at ' .. cur .. ': no token above it fits in 63 bits'
    end
  end
  if not lease then
    return nil, nil
  end
  t = t or redis.call('time')
  local floor = t[1] .. string.sub('000000', #t[2] + 1) .. t[2]
  local set, ttl = floor, lease
  if not negative and not decimal_less(cur, floor) then
    -- Ahead of the clock: one more, as a decimal string (INCR refused
    -- it), keeping a longer TTL it had.
    local i = #cur
    while i > 0 and string.byte(cur, i) == 57 do -- '9'
      i = i - 1
    end
    if i == 0 then
      set = '1' .. string.rep('0', #cur)
    else
      set = string.sub(cur, 1, i - 1) .. string.char(string.byte(cur, i) + 1) .. string.rep('0', #cur - i)
    end
    ttl = math.max(redis.call('pttl', key), tonumber(lease))
  end
  redis.call('set', key, set, 'px', ttl)
  return set
end

-- token_next(key, n, lease, t) returns the token of a draw whose INCR of
-- key returned n, a number token_fast did not take, as a decimal string:
-- the clock's floor for a counter that no draw from the clock left (n below
-- 10^15), set with lease, else the counter as Redis holds it (past 2^53, the
-- number INCR returned is rounded, the value is not), its TTL set to lease.
-- Its writes cannot fail: a script that has INCRed the counter by pcall
-- itself (lock_handoff, which makes no handoff when INCR refuses) calls it
-- after its own first write.
local function token_next(key, n, lease, t)
  if n < 1e15 then
    -- TIME in µs, as a decimal string.
    t = t or redis.call('time')
    local floor = t[1] .. string.sub('000000', #t[2] + 1) .. t[2]
    redis.call('set', key, floor, 'px', lease)
    return floor
  end
  redis.call('pexpire', key, lease)
  return redis.call('get', key)
end

local function token_draw(key, lease, t, n)
  if type(n) == 'table' then
    if not (string.find(n.err, 'not an integer', 1, true) or string.find(n.err, 'overflow', 1, true)) then
      -- Refused for what it is, not for the value (WRONGTYPE, OOM,
      -- READONLY, an ACL): raised again by redis.call, as Redis words it.
      redis.call('incr', key)
    end
    return token_odd(key, redis.call('get', key), lease, t)
  end
  return token_next(key, n, lease, t)
end
