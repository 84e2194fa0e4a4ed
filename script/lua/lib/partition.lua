-- partition: the membership and assignment of a partition group (package
-- partition), shared by the partition_* scripts. A group NAME of N
-- partitions keeps two keys, in the slot of {NAME}:
--
--   {NAME}:members     zset: MEMBER (CLIENT_ID:LEASE_ID) -> when its lease
--                      ends, ms on the server's clock
--   {NAME}:partitions  hash: 'n' -> N; 'gen' -> the generation, raised by
--                      every change of the assignment; 'owner:MEMBER' ->
--                      the partitions assigned to MEMBER, ascending,
--                      separated by spaces ('0 5 9'; absent: none);
--                      'capacity:MEMBER' -> the most MEMBER owns (absent:
--                      no limit)
--
-- and tells of each change on leasehold_partition__channel:{NAME}. A member
-- is live until its lease ends; both keys expire with the last member's.
-- Partition P itself is the reentrant lock NAME:P, on rlock's layout.
--
-- partition_now() is the server's clock (TIME) in ms.
-- partition_read(members, group) checks both keys' types and reads the
-- group hash; it may fail, so call it before the script's first write. It
-- returns a table {n, gen, rows = {MEMBER -> row}, caps = {MEMBER ->
-- capacity}}, or nil and an error reply's message.
-- partition_prune(members, group, g, now) drops the members whose lease has
-- ended by now, with their rows and capacities, and returns how many; a
-- row dropped sets g.dropped (a script that drops one sets it too).
-- partition_assign(members, group, g) assigns the n partitions among the
-- live members, writes the rows that changed and raises the generation if
-- any did or g.dropped is set; it returns whether any row changed. The
-- rule, sticky and balanced: each member's quota is an equal share, floor
-- or ceil of n over the members (the extra ones to those that own the most
-- now, then by name), except that a member whose capacity is below its
-- share gets its capacity and the others share the rest; a partition stays
-- with its live owner while the owner is within its quota (its lowest
-- partitions first), and the others go, ascending, to the members below
-- their quota, by name. A membership change thus moves only what must
-- move, each partition once.
-- partition_keep(members, group, now) has both keys expire with the last
-- member's lease, or deletes them when no member is left.
--
-- The scripts call only commands a lock user's ACL has already (see
-- docs/safety.md): ZRANGE BYSCORE, not ZRANGEBYSCORE; PEXPIRE, not
-- PEXPIREAT.
--
-- Needs in scope: nothing but redis; the keys are parameters.

local function partition_now()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function partition_read(members, group)
  local kind = redis.call('type', members)['ok']
  if kind ~= 'zset' and kind ~= 'none' then
    return nil, 'WRONGTYPE partition group key ' .. members .. ' holds a ' .. kind .. ', not a zset'
  end
  kind = redis.call('type', group)['ok']
  if kind ~= 'hash' and kind ~= 'none' then
    return nil, 'WRONGTYPE partition group key ' .. group .. ' holds a ' .. kind .. ', not a hash'
  end
  local h = redis.call('hgetall', group)
  local g = {gen = 0, rows = {}, caps = {}}
  for i = 1, #h, 2 do
    local f, v = h[i], h[i + 1]
    if f == 'n' or f == 'gen' or string.sub(f, 1, 9) == 'capacity:' then
      if not string.match(v, '^%d+$') or #v > 15 then
        return nil, 'ERR partition group ' .. group .. ' field ' .. f .. ' holds "' .. v .. '", not a count'
      end
      v = tonumber(v)
    end
    if f == 'n' or f == 'gen' then
      g[f] = v
    elseif string.sub(f, 1, 6) == 'owner:' then
      g.rows[string.sub(f, 7)] = v
    elseif string.sub(f, 1, 9) == 'capacity:' then
      g.caps[string.sub(f, 10)] = v
    end
  end
  return g
end

local function partition_prune(members, group, g, now)
  local gone = redis.call('zrange', members, '-inf', now, 'byscore')
  if #gone == 0 then
    return 0
  end
  redis.call('zrem', members, unpack(gone))
  local fields = {}
  for _, m in ipairs(gone) do
    fields[#fields + 1] = 'owner:' .. m
    fields[#fields + 1] = 'capacity:' .. m
    g.dropped = g.dropped or g.rows[m] ~= nil
    g.rows[m], g.caps[m] = nil, nil
  end
  redis.call('hdel', group, unpack(fields))
  return #gone
end

local function partition_assign(members, group, g)
  local live = redis.call('zrange', members, 0, -1)
  table.sort(live)
  local n = g.n or 0
  -- Who owns each partition now: a live member, for a partition below n,
  -- the first row that names it.
  local count, owner = {}, {}
  for _, m in ipairs(live) do
    count[m] = 0
  end
  for _, m in ipairs(live) do
    for p in string.gmatch(g.rows[m] or '', '%d+') do
      p = tonumber(p)
      if p < n and not owner[p] then
        owner[p], count[m] = m, count[m] + 1
      end
    end
  end
  -- Quotas: capacities below the share first, then floor or ceil of what
  -- is left, the ceil to those that own the most now.
  local quota, open, left = {}, live, n
  while #open > 0 do
    local share, rest = math.floor(left / #open), {}
    for _, m in ipairs(open) do
      local cap = g.caps[m]
      if cap and cap <= share then
        quota[m], left = cap, left - cap
      else
        rest[#rest + 1] = m
      end
    end
    if #rest == #open then
      break
    end
    open = rest
  end
  if #open > 0 then
    local base = math.floor(left / #open)
    local extra = left - base * #open
    local order = {}
    for i, m in ipairs(open) do
      order[i] = m
    end
    table.sort(order, function(a, b)
      if count[a] ~= count[b] then
        return count[a] > count[b]
      end
      return a < b
    end)
    for i, m in ipairs(order) do
      quota[m] = base
      if i <= extra then
        quota[m] = base + 1
      end
    end
  end
  -- Keep what stays, then hand out the rest.
  local rows, kept, free = {}, {}, {}
  for _, m in ipairs(live) do
    rows[m], kept[m] = {}, 0
  end
  for p = 0, n - 1 do
    local m = owner[p]
    if m and kept[m] < quota[m] then
      kept[m] = kept[m] + 1
      rows[m][kept[m]] = p
    else
      free[#free + 1] = p
    end
  end
  local next = 1
  for _, m in ipairs(live) do
    while kept[m] < quota[m] and next <= #free do
      kept[m] = kept[m] + 1
      rows[m][kept[m]] = free[next]
      next = next + 1
    end
  end
  local changed = false
  for _, m in ipairs(live) do
    table.sort(rows[m])
    local row = table.concat(rows[m], ' ')
    if row ~= (g.rows[m] or '') then
      changed = true
      if row == '' then
        redis.call('hdel', group, 'owner:' .. m)
        g.rows[m] = nil
      else
        redis.call('hset', group, 'owner:' .. m, row)
        g.rows[m] = row
      end
    end
  end
  for m in pairs(g.rows) do
    if not count[m] then
      -- The row of no live member (left by hand): it goes.
      changed = true
      redis.call('hdel', group, 'owner:' .. m)
      g.rows[m] = nil
    end
  end
  if changed or g.dropped then
    g.gen = g.gen + 1
    redis.call('hset', group, 'gen', g.gen)
  end
  return changed
end

local function partition_keep(members, group, now)
  local last = redis.call('zrange', members, -1, -1, 'withscores')
  if #last == 0 then
    redis.call('del', members, group)
    return
  end
  local ttl = string.format('%d', math.max(tonumber(last[2]) - now, 1))
  redis.call('pexpire', members, ttl)
  redis.call('pexpire', group, ttl)
end
