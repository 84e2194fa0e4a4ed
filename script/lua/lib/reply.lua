-- reply: a script's reply of several values as one string, the values
-- separated by spaces ("1 1795610644477770 2" for {1, token, count}), rather
-- than an array. Redis builds a script's array reply in a reply block of 16
-- KiB whatever its size, and a connection that also holds subscriptions
-- (leasehold's one connection) is in the pubsub output-buffer class, which
-- may be limited far below that (client-output-buffer-limit pubsub): an
-- array reply would get the connection closed, the lock taken and the reply
-- lost. A string reply takes what it needs.
--
-- reply(a, b, c) joins two or three values (c may be nil), writing numbers
-- as integers (exact to 2^63; a number's tostring would round past 14
-- digits) and strings (a token's decimal digits) as they are. Fixed
-- arguments, not ...: a reply builds no table, and it is one function, not
-- two: each function a script defines is a closure Lua makes on every run.
--
-- Needs in scope: nothing.

local function reply(a, b, c)
  if type(a) == 'number' then
    a = string.format('%d', a)
  end
  if type(b) == 'number' then
    b = string.format('%d', b)
  end
  if c == nil then
    return a .. ' ' .. b
  end
  if type(c) == 'number' then
    c = string.format('%d', c)
  end
  return a .. ' ' .. b .. ' ' .. c
end
