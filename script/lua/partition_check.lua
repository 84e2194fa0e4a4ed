-- partition_check: what MEMBER of a partition group (see lib/partition.lua)
-- acts on: whether it is still a member, the generation, how many members
-- are live, when the first of the others' leases ends, and MEMBER's
-- partitions. Members whose lease has ended are dropped first, the
-- partitions assigned anew and the group told; otherwise it writes
-- nothing. A member runs it when told of a change, and when the first of
-- the others' leases is due to end (alone, once a lease).
--
-- KEYS[1]  {NAME}:members
-- KEYS[2]  {NAME}:partitions
-- KEYS[3]  leasehold_partition__channel:{NAME}
-- ARGV[1]  MEMBER
-- ARGV[2]  message, '1'
--
-- Returns "MEMBER? GEN MEMBERS NEXT P..." as one string of integers:
--         MEMBER? 1 while MEMBER's lease runs, else 0; GEN the generation;
--         MEMBERS the live members; NEXT the ms until the first lease of
--         another member ends (-1: no other member); then MEMBER's
--         partitions, ascending.
-- Everything that can fail (a key of another type, a field that is not a
-- count) fails before the first write.
--
-- Calls: steady 6, dropping another 19
--!include partition
local now = partition_now()
local g
if #redis.call('zrange', KEYS[1], '-inf', now, 'byscore', 'limit', 0, 1) > 0 then
  local err
  g, err = partition_read(KEYS[1], KEYS[2])
  if not g then
    return redis.error_reply(err)
  end
  partition_prune(KEYS[1], KEYS[2], g, now)
  partition_assign(KEYS[1], KEYS[2], g)
  partition_keep(KEYS[1], KEYS[2], now)
  redis.pcall('publish', KEYS[3], ARGV[2])
end
local f = redis.call('hmget', KEYS[2], 'gen', 'owner:' .. ARGV[1])
local lease_end = redis.call('zscore', KEYS[1], ARGV[1])
local member = 0
if lease_end and tonumber(lease_end) > now then
  member = 1
end
local next = -1
local first = redis.call('zrange', KEYS[1], 0, 1, 'withscores')
for i = 1, #first, 2 do
  if first[i] ~= ARGV[1] then
    next = math.max(tonumber(first[i + 1]) - now, 0)
    break
  end
end
return string.format('%d %d %d %d', member, tonumber(f[1] or '0') or 0, redis.call('zcard', KEYS[1]), next)
  .. ((f[2] and (' ' .. f[2])) or '')
