-- fence_write: run one write command on KEY if TOKEN is not lower than the
-- last token a fenced write applied to KEY, then record TOKEN (package fence).
--
-- KEYS[1]  KEY                     the key the command writes (its only key)
-- KEYS[2]  leasehold_fence:{KEY}   string: the last token applied to KEY
-- ARGV[1]  TOKEN, decimal, 1..2^63-1, no leading zero
-- ARGV[2]  the command; ARGV[3..] its arguments after KEY
--
-- Returns {1, reply} when applied (reply: the command's),
--         {0, last}  when refused (last: the token applied, a string).
-- Tokens are compared as decimal strings (length, then bytes): exact where
-- Lua's doubles are not, above 2^53. Everything that can refuse comes before
-- the first write, the command: a refused write, a record of the wrong type
-- or a command Redis rejects change nothing. The record then takes TOKEN and
-- the key's expiry (none if the key has none, or is gone), so it expires no
-- sooner than the key.
local last = redis.call('get', KEYS[2])
if last then
  if not string.match(last, '^[1-9][0-9]*$') then
    return redis.error_reply('ERR fence: the token record ' .. KEYS[2] .. ' is not a token')
  end
  local token = ARGV[1]
  if #token < #last or (#token == #last and token < last) then
    return {0, last}
  end
end
local reply = redis.call(ARGV[2], KEYS[1], unpack(ARGV, 3))
local ttl = redis.call('pttl', KEYS[1])
redis.call('set', KEYS[2], ARGV[1])
if ttl > 0 then
  redis.call('pexpire', KEYS[2], ttl)
end
return {1, reply}
