-- inspect: one consistent snapshot of the lock NAME, whatever its kind and
-- whoever wrote it (leasehold or Redisson), for the leasehold command (Go:
-- internal/lua's Inspect). It only reads.
--
-- KEYS[1]  NAME                               the lock hash
-- KEYS[2]  redisson_lock_token:{NAME}         fencing counter
-- KEYS[3]  redisson_lock_queue:{NAME}         fair lock: waiting owners, oldest first
-- KEYS[4]  redisson_lock_timeout:{NAME}       fair lock: waiter -> deadline (ms)
-- KEYS[5]  leasehold_rwlock_writers:{NAME}    rw: waiting writers -> announcement expiry (ms)
-- KEYS[6]  {NAME}:timeout                     semaphore: permit id -> expiry (ms)
-- KEYS[7]  leasehold_semaphore_claims:{NAME}  semaphore: waiter OWNER:N -> claim expiry (ms)
-- KEYS[8]  {NAME}:leader                      election: hash value, token (the term), owner
-- ARGV[1]  prefix of the rw read hold keys, {NAME} (NAME if it holds a '{');
--          hold N of OWNER is PREFIX:OWNER:rwlock_timeout:N
--
-- Returns {type of NAME, pttl of NAME, {field, value, ...} of the hash,
--          token or false, {queued owner, ...}, {owner, deadline, ...},
--          {writer, expiry, ...}, now (ms, server clock),
--          {{reader, pttl of hold 1, pttl of hold 2, ...}, ...},
--          {permit id, expiry, ...}, {claim, expiry, ...},
--          the string NAME holds (a semaphore's permits available) or false,
--          {value, token, owner} of the leader key, or false when it is no hash}
-- The read holds are keys the script does not declare, as Redisson's read
-- lock scripts do; they share NAME's cluster slot.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local typ = redis.call('type', KEYS[1])['ok']
local fields = {}
local holds = {}
if typ == 'hash' then
  fields = redis.call('hgetall', KEYS[1])
  local mode = redis.call('hget', KEYS[1], 'mode')
  if mode then
    for i = 1, #fields, 2 do
      local f, n = fields[i], tonumber(fields[i + 1])
      if f ~= 'mode' and n and string.sub(f, -6) ~= ':write' then
        local h = {f}
        for j = 1, math.min(n, 100) do
          h[#h + 1] = redis.call('pttl', ARGV[1] .. ':' .. f .. ':rwlock_timeout:' .. j)
        end
        holds[#holds + 1] = h
      end
    end
  end
end
local function zall(key)
  if redis.call('type', key)['ok'] ~= 'zset' then
    return {}
  end
  return redis.call('zrange', key, 0, -1, 'withscores')
end
local queue = {}
if redis.call('type', KEYS[3])['ok'] == 'list' then
  queue = redis.call('lrange', KEYS[3], 0, -1)
end
local token = false
if redis.call('type', KEYS[2])['ok'] == 'string' then
  token = redis.call('get', KEYS[2])
end
local count = false
if typ == 'string' then
  count = redis.call('get', KEYS[1])
end
local leader = false
if redis.call('type', KEYS[8])['ok'] == 'hash' then
  leader = redis.call('hmget', KEYS[8], 'value', 'token', 'owner')
end
return {typ, redis.call('pttl', KEYS[1]), fields, token, queue, zall(KEYS[4]), zall(KEYS[5]), now, holds,
  zall(KEYS[6]), zall(KEYS[7]), count, leader}
