-- hold: hold_check(name, owner, count) tells whether count, OWNER's field in
-- the lock hash NAME as HGET read it, is one HINCRBY can raise by one: an
-- integer as Redis reads it (no '+', no leading zero, no '-0'), below
-- 2^63-1. A re-entry checks it before its first write (the token's INCR),
-- so that a corrupt count fails before anything is written. It returns nil,
-- or an error message.
--
-- Needs in scope: nothing.
local function hold_check(name, owner, count)
  local minus, digits = string.match(count, '^(%-?)([1-9]%d*)$')
  if count == '0' or (digits and (#digits < 19 or (#digits == 19 and (minus == '-' or digits < '9223372036854775807')))) then
    return nil
  end
  return 'hold count of ' .. owner .. ' in ' .. name .. ' is "' .. count .. '", not an integer below 2^63-1'
end
