-- rw_read_release: give up one read hold (or every read hold) of OWNER on the
-- read-write lock NAME, deleting the hold keys given up. In read mode the hash
-- then lives as long as its longest live read hold; with none left it is
-- deleted and the unlock message published. The result is kept under a latch
-- key, so a release retried after a lost reply is applied once.
--
-- KEYS[1]  NAME
-- KEYS[2]  redisson_rwlock:{NAME}            unlock channel
-- KEYS[3]  {NAME}:OWNER:rwlock_timeout       prefix of OWNER's read hold keys
-- KEYS[4]  {NAME}                            prefix of every owner's hold keys
-- KEYS[5]  redisson_unlock_latch:{NAME}:REQUEST_ID
-- KEYS[6]  leasehold_rwlock_writers:{NAME}   zset of waiting writers
-- ARGV[1]  OWNER
-- ARGV[2]  latch lifetime, ms
-- ARGV[3]  '1': release every read hold of OWNER; '0': release one
--
-- Publishes '0' (wake one waiter: a writer, since readers do not wait on
-- readers) when the lock is freed, or '1' (wake all) if writers have
-- announced themselves, because readers held back for them wait on the same
-- channel and one wake-up could land on a reader that cannot use it.
--
-- Returns 1 when the lock is now free, 0 when it is still held,
--         -1 when OWNER held no read.
--
-- Calls: last reader 9, last reader with a writer waiting 10, readers left 9, one of several holds 9, not held 2
local latched = redis.call('get', KEYS[5])
if latched then
  return tonumber(latched)
end
local f = redis.call('hmget', KEYS[1], 'mode', ARGV[1])
local mode, count = f[1], tonumber(f[2])
if mode == false or count == nil then
  return -1
end
-- The announcement that lasts longest is the last; read before the writes,
-- so that a key of another type fails here.
local last = redis.call('zrange', KEYS[6], -1, -1, 'WITHSCORES')
local left = 0
if ARGV[3] == '0' then
  left = count - 1
end
for i = count, left + 1, -1 do
  redis.call('del', KEYS[3] .. ':' .. i)
end
if left > 0 then
  redis.call('hset', KEYS[1], ARGV[1], left)
else
  redis.call('hdel', KEYS[1], ARGV[1])
end
if mode == 'write' then
  -- A writer holds (this was a read under its write lease): its lease rules.
  redis.call('set', KEYS[5], 0, 'px', ARGV[2])
  return 0
end
local longest = -3
local fields = redis.call('hgetall', KEYS[1])
for i = 1, #fields, 2 do
  local n = tonumber(fields[i + 1])
  if fields[i] ~= 'mode' and n ~= nil then
    for j = n, 1, -1 do
      longest = math.max(longest, redis.call('pttl', KEYS[4] .. ':' .. fields[i] .. ':rwlock_timeout:' .. j))
    end
  end
end
if longest > 0 then
  redis.call('pexpire', KEYS[1], longest)
  redis.call('set', KEYS[5], 0, 'px', ARGV[2])
  return 0
end
redis.call('del', KEYS[1])
-- A writer waits while its announcement lasts (an expired one is a writer
-- that stopped asking; the writers' zset expires with its longest).
local waiting = false
if #last > 0 then
  local t = redis.call('time')
  waiting = tonumber(last[2]) > tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
if waiting then
  redis.pcall('publish', KEYS[2], '1')
else
  redis.pcall('publish', KEYS[2], '0')
end
redis.call('set', KEYS[5], 1, 'px', ARGV[2])
return 1
