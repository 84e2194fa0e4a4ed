-- election_leader: read the election's leader: the owner the leader key
-- names, if it still holds NAME. It writes nothing.
--
-- KEYS[1]  NAME
-- KEYS[2]  {NAME}:leader
--
-- Returns {value, token, owner, pttl} when there is a leader (token, the
--         term, a decimal string; pttl, NAME's remaining lease in ms, -1:
--         no expiry),
--         {}                        when there is none (a leader key of
--                                   another type is none).
local f = redis.pcall('hmget', KEYS[2], 'value', 'token', 'owner')
if f.err or not f[3] or redis.call('hexists', KEYS[1], f[3]) == 0 then
  return {}
end
return {f[1] or '', f[2] or '0', f[3], redis.call('pttl', KEYS[1])}
