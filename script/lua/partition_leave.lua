-- partition_leave: MEMBER leaves its partition group (see
-- lib/partition.lua): its partitions are assigned to the others at once
-- (each goes to its new owner once MEMBER gives up its lock), members whose
-- lease has ended are dropped, and the group is told. The last member to
-- leave takes the group's keys with it.
--
-- KEYS[1]  {NAME}:members
-- KEYS[2]  {NAME}:partitions
-- KEYS[3]  leasehold_partition__channel:{NAME}
-- ARGV[1]  MEMBER
-- ARGV[2]  message, '1'
--
-- Returns 1 when MEMBER left, -1 when it was no member (then nothing is
-- written).
-- Everything that can fail (a key of another type, a field that is not a
-- count) fails before the first write.
--
-- Calls: last member 12, one of two 16, not a member 4
--!include partition
local g, err = partition_read(KEYS[1], KEYS[2])
if not g then
  return redis.error_reply(err)
end
if not redis.call('zscore', KEYS[1], ARGV[1]) then
  return -1
end
redis.call('zrem', KEYS[1], ARGV[1])
redis.call('hdel', KEYS[2], 'owner:' .. ARGV[1], 'capacity:' .. ARGV[1])
g.dropped = g.rows[ARGV[1]] ~= nil
g.rows[ARGV[1]], g.caps[ARGV[1]] = nil, nil
local now = partition_now()
partition_prune(KEYS[1], KEYS[2], g, now)
if redis.call('zcard', KEYS[1]) > 0 then
  partition_assign(KEYS[1], KEYS[2], g)
end
partition_keep(KEYS[1], KEYS[2], now)
redis.pcall('publish', KEYS[3], ARGV[2])
return 1
