-- fair_acquire: one attempt of OWNER on the fair lock NAME, laid out as
-- Redisson's RFairLock: the lock hash, a list of waiting owners (oldest
-- first) and a sorted set of each waiter's deadline to stay in the list.
--
-- KEYS[1]  NAME                           hash: OWNER -> hold count
-- KEYS[2]  redisson_lock_queue:{NAME}     list: waiting owners, oldest first
-- KEYS[3]  redisson_lock_timeout:{NAME}   zset: waiting owner -> deadline (server clock, ms)
-- KEYS[4]  redisson_lock_token:{NAME}     fencing counter (see lib/token.lua)
-- KEYS[5]  redisson_lock__channel:{NAME}  prefix of the per-waiter channels, PREFIX:OWNER
-- ARGV[1]  lease time, ms
-- ARGV[2]  OWNER (CLIENT_ID:LEASE_ID)
-- ARGV[3]  queue timeout, ms: a waiter's deadline is now + this at each attempt
-- ARGV[4]  refresh interval, ms: the longest a waiter sleeps between attempts
-- ARGV[5]  '1': on failure join the queue, or refresh the deadline if in it
--          (Acquire); '0': never join (TryAcquire)
-- ARGV[6]  wake-up message, '0'
--
-- Returns {1, token, hold count} when OWNER holds the lock (token a decimal string;
--                                0 for a re-entry, whose Lease fences with its hold's),
--         {0, wait ms}           when it does not: how long to sleep before the
--                                next attempt (the holder's remaining lease for
--                                the head of the queue when that is shorter than
--                                the refresh interval, else the refresh interval).
--
-- Deadlines are read from the server's clock, never a client's, and each
-- waiter's deadline depends on nothing but its own last attempt: deadlines
-- cannot drift, and clients with skewed clocks cannot evict live waiters.
-- The list and the zset expire at the last deadline (lib/fair_expire.lua).
-- Replies are written as one string of space-separated values: see lib/reply.lua.
--
-- Calls: free lock 11, re-entry 7, held by another 8, held by another joining 15, head of the queue 16
--!include reply
redis.replicate_commands() -- TIME before writes (Redis < 5); a no-op since 7.0
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local owner = ARGV[2]
local refresh = tonumber(ARGV[4])

-- queue_check, prune, tell_head and queue_expire, shared by the fair
-- scripts: lua/lib/, spliced in at load.
--!include fair_prune
--!include fair_tell_head
--!include fair_expire
--!include token
--!include token_check
--!include hold

-- Everything that can fail (a key of another type, a corrupt counter, a hold
-- count that is not an integer) fails before the first write: the reads
-- come first. The counter is checked here and drawn from after the queue is
-- pruned, so that the draw cannot fail after a write.
local held = redis.call('hget', KEYS[1], owner)
local err
if held then
  err = hold_check(KEYS[1], owner, held)
else
  err = token_check(KEYS[4])
end
if err then
  return redis.error_reply('ERR ' .. err)
end
queue_check(KEYS[2], KEYS[3])

-- Re-entry by the holder: no token is drawn, the re-entry's Lease fences
-- with its hold's.
if held then
  local count = redis.call('hincrby', KEYS[1], owner, 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  if prune(KEYS[2], KEYS[3], now) then
    tell_head(KEYS[1], KEYS[2], KEYS[5], ARGV[6], refresh, owner)
  end
  return reply(1, 0, count)
end
local pruned, head = prune(KEYS[2], KEYS[3], now)

-- A free lock goes to the head of the queue, or to anyone if nobody waits:
-- never to a newcomer while others wait.
local free = redis.call('exists', KEYS[1]) == 0
if free and (not head or head == owner) then
  local n = redis.pcall('incr', KEYS[4])
  local token
--!include token_fast n KEYS[4] ARGV[1]
  if not token then
    token = token_draw(KEYS[4], ARGV[1], t, n)
  end
  if head then
    -- The zset and the list change together in every script (ours and
    -- Redisson's): an owner in neither has no score to remove.
    redis.call('lpop', KEYS[2])
    redis.call('zrem', KEYS[3], owner)
  end
  redis.call('hset', KEYS[1], owner, 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  if head or pruned then
    -- The next waiter is now the head: it must time the new lease if that is
    -- shorter than its refresh interval.
    tell_head(KEYS[1], KEYS[2], KEYS[5], ARGV[6], refresh, owner)
  end
  return reply(1, token, 1)
end

if ARGV[5] == '1' then
  -- The zset and the list change together in every script (ours and
  -- Redisson's), so a score means a place in the list: refresh it in place.
  local deadline = now + tonumber(ARGV[3])
  if redis.call('zscore', KEYS[3], owner) then
    redis.call('zadd', KEYS[3], deadline, owner)
  else
    redis.call('zadd', KEYS[3], deadline, owner)
    redis.call('rpush', KEYS[2], owner)
  end
  queue_expire(KEYS[2], KEYS[3], now)
end
if pruned or free then
  tell_head(KEYS[1], KEYS[2], KEYS[5], ARGV[6], refresh, owner)
end

local pttl = redis.call('pttl', KEYS[1])
if ARGV[5] == '0' then
  return reply(0, pttl)
end
if redis.call('lindex', KEYS[2], 0) == owner and pttl >= 0 and pttl < refresh then
  return reply(0, math.max(pttl, 1))
end
return reply(0, refresh)
