-- semaphore: helpers of the semaphore scripts (Redisson's
-- RPermitExpirableSemaphore layout). NAME holds the permits available, a
-- decimal integer (it may go below zero after AddPermits with a negative
-- count); {NAME}:timeout holds one entry per permit taken, permit id ->
-- expiry in epoch ms. Java's permits taken without a lease time carry the
-- expiry 922337203685477 (Redisson's nonExpirableTimeout): they never expire.
--
-- semaphore_max is the most permits NAME may hold either way, 2^53 - 1
-- (script.MaxPermits): Lua's numbers, doubles, count exactly up to there, so
-- every sum the scripts make of NAME is exact, and INCRBY cannot overflow.
-- semaphore_read(name, timeouts) reads both keys and may fail (a key of
-- another type, NAME not an integer INCRBY takes, or beyond semaphore_max):
-- call it before the script's first write. It returns the permits available
-- (nil when NAME is unset) and the permits taken, or nil, nil and an error
-- message.
-- semaphore_now() is the server's clock (TIME) in ms: expiries are never
-- taken from a client's clock.
-- semaphore_reclaim(name, timeouts, channel, now, available) gives back
-- every permit whose expiry has passed, as Redisson's scripts do before they
-- act, and publishes the permits then available when there are any.
-- available is what semaphore_read returned. It returns the permits
-- available after (nil when NAME is unset and nothing expired).
-- permit_id(prefix, i) is permit i (0-based) of a leasehold lease: the
-- lease's 14-byte prefix and i as 2 big-endian bytes, 16 bytes in all, the
-- size of Redisson's ids.
-- permits_call(cmd, key, prefix, n, score) runs cmd (ZADD with score, or
-- ZREM) on the n permits of a lease, a few hundred a call rather than one,
-- and returns the sum of the replies.
--
-- Needs in scope: nothing but redis; the keys are parameters.

local semaphore_max = 9007199254740991

local function semaphore_read(name, timeouts)
  local value = redis.call('get', name)
  local taken = redis.call('zcard', timeouts)
  if not value then
    return nil, taken
  end
  -- What INCRBY reads as an integer: no sign but '-', no leading zero.
  if value ~= '0' and not string.match(value, '^%-?[1-9]%d*$') then
    return nil, nil, 'semaphore ' .. name .. ' holds "' .. value .. '", not a number of permits'
  end
  -- A value past 2^53 - 1 reads as a double of at least 2^53: the
  -- comparison is exact.
  if math.abs(tonumber(value)) > semaphore_max then
    return nil, nil, 'semaphore ' .. name .. ' holds ' .. value .. ' permits, beyond ' .. string.format('%.0f', semaphore_max)
  end
  return tonumber(value), taken
end

local function semaphore_now()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function semaphore_reclaim(name, timeouts, channel, now, available)
  local expired = redis.call('zcount', timeouts, 0, now)
  if expired == 0 then
    return available
  end
  redis.call('zremrangebyscore', timeouts, 0, now)
  local value = redis.call('incrby', name, expired)
  if value > 0 then
    redis.pcall('publish', channel, value)
  end
  return value
end

local function permit_id(prefix, i)
  return prefix .. string.char(math.floor(i / 256), i % 256)
end

local function permits_call(cmd, key, prefix, n, score)
  local sum = 0
  local args = {}
  for first = 0, n - 1, 256 do
    local m = 0
    for i = first, math.min(first + 255, n - 1) do
      if score then
        args[m + 1] = score
        m = m + 1
      end
      args[m + 1] = permit_id(prefix, i)
      m = m + 1
    end
    sum = sum + redis.call(cmd, key, unpack(args, 1, m))
  end
  return sum
end
