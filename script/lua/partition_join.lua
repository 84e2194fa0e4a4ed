-- partition_join: MEMBER joins the partition group of N partitions (see
-- lib/partition.lua) under a lease from now, by the server's clock; members
-- whose lease has ended are dropped, the partitions are assigned anew
-- (partition_assign) and the group is told.
--
-- The group's live members agree on N: a join with another N while any
-- member is live is refused, writing nothing. A group with no live member
-- takes the N of whoever joins.
--
-- KEYS[1]  {NAME}:members                       zset: MEMBER -> lease end (ms)
-- KEYS[2]  {NAME}:partitions                    hash: n, gen, owner:MEMBER, capacity:MEMBER
-- KEYS[3]  leasehold_partition__channel:{NAME}  where changes are told
-- ARGV[1]  lease time, ms
-- ARGV[2]  MEMBER (CLIENT_ID:LEASE_ID)
-- ARGV[3]  N, the partitions
-- ARGV[4]  MEMBER's capacity, the most partitions it owns ('0': no limit)
-- ARGV[5]  message, '1'
--
-- Returns {1, generation, 1} when MEMBER is a member (an acquire script's
--         reply, see lib/reply.lua),
--         {0, -1}                when the live members have another N.
-- Everything that can fail (a key of another type, a field that is not a
-- count) fails before the first write.
--
-- Calls: first member 14, second member 14, another N 5
--!include reply
--!include partition
local g, err = partition_read(KEYS[1], KEYS[2])
if not g then
  return redis.error_reply(err)
end
local now = partition_now()
local n = tonumber(ARGV[3])
if g.n and g.n ~= n and redis.call('zcount', KEYS[1], '(' .. now, '+inf') > 0 then
  return reply(0, -1)
end
partition_prune(KEYS[1], KEYS[2], g, now)
redis.call('zadd', KEYS[1], now + tonumber(ARGV[1]), ARGV[2])
if ARGV[4] ~= '0' then
  g.caps[ARGV[2]] = tonumber(ARGV[4])
  redis.call('hset', KEYS[2], 'capacity:' .. ARGV[2], ARGV[4])
end
if g.n ~= n then
  g.n = n
  redis.call('hset', KEYS[2], 'n', ARGV[3])
end
partition_assign(KEYS[1], KEYS[2], g)
partition_keep(KEYS[1], KEYS[2], now)
redis.pcall('publish', KEYS[3], ARGV[5])
return reply(1, g.gen, 1)
