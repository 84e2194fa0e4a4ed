-- reply: a script's reply of several values as one string, the values
-- separated by spaces ("1 1795610644477770 2" for {1, token, count}), rather
-- than an array. Redis builds a script's array reply in a reply block of 16
-- KiB whatever its size, and a connection that also holds subscriptions
-- (leasehold's one connection) is in the pubsub output-buffer class, which
-- may be limited far below that (client-output-buffer-limit pubsub): an
-- array reply would get the connection closed, the lock taken and the reply
-- lost. A string reply takes what it needs.
--
-- reply(...) writes numbers as integers (exact to 2^63; a number's
-- tostring would round past 14 digits) and strings (a token's decimal
-- digits) as they are.
--
-- Needs in scope: nothing.

local function reply(...)
  local parts = {...}
  for i = 1, #parts do
    if type(parts[i]) == 'number' then
      parts[i] = string.format('%d', parts[i])
    end
  end
  return table.concat(parts, ' ')
end
