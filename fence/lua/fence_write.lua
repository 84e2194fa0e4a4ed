-- fence_write: run one write command on KEY if TOKEN is not lower than the
-- last token a fenced write applied to KEY, then record TOKEN (package fence).
--
-- KEYS[1]  KEY                     the key the command writes (its only key)
-- KEYS[2]  leasehold_fence:{KEY}   string: the last token applied to KEY
-- ARGV[1]  TOKEN, decimal, 1..2^63-1, no leading zero
-- ARGV[2]  the command; ARGV[3..] its arguments after KEY
--
-- Returns {1, reply}         when applied (reply: the command's),
--         {0, last}          when refused (last: the token applied, a string),
--         {-1, step, error}  when Redis refused a step ('get', 'command', 'set',
--                            'pttl', 'pexpire'; the last three after the
--                            command was applied), error its reply,
--         {-2, last}         when the record holds last, which is no token.
-- Tokens are compared as decimal strings (length, then bytes): exact where
-- Lua's doubles are not, above 2^53. Every call is a pcall, so that Redis'
-- refusal comes back in its own words rather than as the script's error
-- (its SHA and line). Everything that can refuse comes before the first
-- write, the command: a refused write, a record of the wrong type or a
-- command Redis rejects change nothing. The record then takes TOKEN, before
-- anything else can fail, and the key's expiry (none if the key has none,
-- or is gone), so it expires no sooner than the key.
local last = redis.pcall('get', KEYS[2])
if type(last) == 'table' then
  return {-1, 'get', last.err}
end
if last then
  if not string.match(last, '^[1-9][0-9]*$') then
    return {-2, last}
  end
  local token = ARGV[1]
  if #token < #last or (#token == #last and token < last) then
    return {0, last}
  end
end
local reply = redis.pcall(ARGV[2], KEYS[1], unpack(ARGV, 3))
if type(reply) == 'table' and reply.err then
  return {-1, 'command', reply.err}
end
local set = redis.pcall('set', KEYS[2], ARGV[1])
if set.err then
  return {-1, 'set', set.err}
end
local ttl = redis.pcall('pttl', KEYS[1])
if type(ttl) == 'table' then
  return {-1, 'pttl', ttl.err}
end
if ttl > 0 then
  local expire = redis.pcall('pexpire', KEYS[2], ttl)
  if type(expire) == 'table' then
    return {-1, 'pexpire', expire.err}
  end
end
return {1, reply}
