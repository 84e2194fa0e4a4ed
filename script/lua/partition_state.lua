-- partition_state: a partition group (see lib/partition.lua) as it stands,
-- for the operator and for tests. It writes nothing: a member whose lease
-- has ended is shown as it is, until a member's script drops it.
--
-- KEYS[1]  {NAME}:members
-- KEYS[2]  {NAME}:partitions
--
-- Returns one string of lines: "NOW N GEN" (the server's clock in ms, N and
--         the generation, 0 when unset), then one line per member, by
--         lease end: "MEMBER LEASE_END CAPACITY P..." (CAPACITY 0: no
--         limit; then its partitions, ascending). A key of another type
--         fails the read.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local f = redis.call('hmget', KEYS[2], 'n', 'gen')
local lines = {string.format('%d %s %s', now, f[1] or '0', f[2] or '0')}
local ms = redis.call('zrange', KEYS[1], 0, -1, 'withscores')
for i = 1, #ms, 2 do
  local m = ms[i]
  local r = redis.call('hmget', KEYS[2], 'capacity:' .. m, 'owner:' .. m)
  local line = m .. ' ' .. string.format('%d', tonumber(ms[i + 1])) .. ' ' .. (r[1] or '0')
  if r[2] then
    line = line .. ' ' .. r[2]
  end
  lines[#lines + 1] = line
end
return table.concat(lines, '\n')
