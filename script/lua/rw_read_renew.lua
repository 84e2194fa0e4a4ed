-- rw_read_renew: extend every read hold of OWNER on the read-write lock NAME
-- (each key {NAME}:OWNER:rwlock_timeout:N), and the hash to at least the
-- lease, if OWNER still holds a live read. Used by the keeper's renewal round.
-- Renewing the hold keys, not just the hash, is what lets the release of
-- another reader see this one as alive.
--
-- KEYS[1]  NAME
-- KEYS[2]  {NAME}:OWNER:rwlock_timeout   prefix of OWNER's read hold keys
-- ARGV[1]  lease time, ms
-- ARGV[2]  OWNER
--
-- Returns 1 when renewed, 0 when OWNER no longer holds a live read.
local count = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
if count == nil then
  return 0
end
local alive = false
for i = count, 1, -1 do
  if redis.call('pexpire', KEYS[2] .. ':' .. i, ARGV[1]) == 1 then
    alive = true
  end
end
if not alive then
  -- The field outlived its hold keys: to every other owner this reader is
  -- gone, so it must not go on as if it held.
  return 0
end
redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[1])))
return 1
