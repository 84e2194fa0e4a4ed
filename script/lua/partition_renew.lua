-- partition_renew: extend MEMBER's lease in its partition group (see
-- lib/partition.lua) to a lease from now, by the server's clock, if it is
-- still a member. Used by the keeper's renewal round. Members whose lease
-- has ended are dropped on the way, the partitions assigned anew and the
-- group told, so that a dead member's partitions move within a renewal
-- interval of its lease's end even if nobody else looks.
--
-- A member whose lease has ended is no longer one, dropped or not.
--
-- KEYS[1]  {NAME}:members
-- KEYS[2]  {NAME}:partitions
-- KEYS[3]  leasehold_partition__channel:{NAME}
-- ARGV[1]  lease time, ms
-- ARGV[2]  MEMBER
-- ARGV[3]  message, '1'
--
-- Returns 1 when renewed, 0 when MEMBER is no longer a member (then
-- nothing is written).
-- Everything that can fail (a key of another type, a field that is not a
-- count) fails before the first write.
--
-- Calls: renewed 7, renewed dropping another 17, not a member 2
--!include partition
local now = partition_now()
local lease_end = redis.call('zscore', KEYS[1], ARGV[2])
if not lease_end or tonumber(lease_end) <= now then
  return 0
end
local g
if #redis.call('zrange', KEYS[1], '-inf', now, 'byscore', 'limit', 0, 1) > 0 then
  local err
  g, err = partition_read(KEYS[1], KEYS[2])
  if not g then
    return redis.error_reply(err)
  end
end
redis.call('zadd', KEYS[1], now + tonumber(ARGV[1]), ARGV[2])
if g then
  partition_prune(KEYS[1], KEYS[2], g, now)
  partition_assign(KEYS[1], KEYS[2], g)
  redis.pcall('publish', KEYS[3], ARGV[3])
end
partition_keep(KEYS[1], KEYS[2], now)
return 1
