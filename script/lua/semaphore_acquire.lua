-- semaphore_acquire: take N permits of the semaphore NAME for one lease
-- (Redisson's RPermitExpirableSemaphore layout, see lib/semaphore.lua): NAME
-- goes down by N and each permit gets an entry in {NAME}:timeout, expiring
-- a lease from now by the server's clock. First, as Redisson's acquire
-- does, permits whose expiry has passed are given back and the permits then
-- available are published on redisson_sc:{NAME}.
--
-- Order among waiters (leasehold's; Redisson's takers do not honour it):
-- larger requests first. A waiter for N > 1 permits that cannot have them
-- leaves a claim in leasehold_semaphore_claims:{NAME}, and an attempt for M
-- permits is served only if the permits left after it still cover every
-- other waiter's claim for more than M. So a stream of single-permit takers
-- cannot starve a waiter for many. A claim lasts until its waiter's next
-- attempt is due plus a grace: a waiter that dies holds smaller ones back
-- for a bounded time only. The attempt that takes its permits withdraws its
-- claim and, if permits remain, publishes them: the smaller takers it held
-- back may go.
--
-- KEYS[1]  NAME                                string: permits available
-- KEYS[2]  {NAME}:timeout                      zset: permit id -> expiry (epoch ms)
-- KEYS[3]  redisson_sc:{NAME}                  channel
-- KEYS[4]  leasehold_semaphore_claims:{NAME}   zset: waiter OWNER:N -> claim expiry (epoch ms)
-- ARGV[1]  N, permits, 1 to 65536
-- ARGV[2]  lease time, ms
-- ARGV[3]  the lease's permit id prefix, 14 bytes (permit_id appends 2 more)
-- ARGV[4]  this waiter's claim, OWNER:N
-- ARGV[5]  '1': leave or refresh the claim if this attempt must wait; '0': do not
-- ARGV[6]  grace, ms: how much longer than its next attempt a claim lasts
--
-- Returns {1, 0, N}   when the permits are taken (token 0: a semaphore draws none),
--         {0, wait}   when they are not (wait in ms until the earliest permit or
--                     blocking claim expires; 0 when none will: NAME unset, or only
--                     permits that never expire),
--         {-1, total} when N is more than the semaphore has (available + taken),
--                     and that is more than 0 (a semaphore of no permits is shut,
--                     as one never set: its takers wait until permits are added).
-- Everything that can fail (a key of another type, NAME not an integer)
-- fails before the first write; so does N above the total.
-- Replies are written as one string of space-separated values: see lib/reply.lua.
--
-- Calls: one permit 8, 3 permits 8, none left 6, over total 2, never set 6, claim and wait 9
--!include reply
--!include semaphore
local available, taken, err = semaphore_read(KEYS[1], KEYS[2])
if err then
  return redis.error_reply('ERR ' .. err)
end
local n = tonumber(ARGV[1])
if available and available + taken > 0 and n > available + taken then
  return reply(-1, available + taken)
end
-- Read before the writes: a key of another type fails here.
local claims = redis.call('zrange', KEYS[4], 0, -1, 'WITHSCORES')
local now = semaphore_now()
available = semaphore_reclaim(KEYS[1], KEYS[2], KEYS[3], now, available)

-- Claims whose expiry has passed are no one waiting: they are skipped here,
-- and go with the zset's own TTL.
local held, blocking, claimed = 0, nil, false
for i = 1, #claims, 2 do
  local expiry = tonumber(claims[i + 1])
  if claims[i] == ARGV[4] then
    claimed = expiry > now
  elseif expiry > now then
    local need = tonumber(string.match(claims[i], ':(%d+)$'))
    if need and need > n then
      held = held + need
      if not blocking or expiry < blocking then
        blocking = expiry
      end
    end
  end
end

if available and available - n >= held then
  redis.call('decrby', KEYS[1], n)
  permits_call('zadd', KEYS[2], ARGV[3], n, now + tonumber(ARGV[2]))
  -- Redisson's acquire: the permits live no longer than a NAME given a TTL.
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then
    redis.call('pexpire', KEYS[2], ttl)
  end
  if claimed then
    redis.call('zrem', KEYS[4], ARGV[4])
    if available - n > 0 then
      redis.pcall('publish', KEYS[3], available - n)
    end
  end
  return reply(1, 0, n)
end

local wait = 0
local first = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES')
if first[1] and first[2] ~= '922337203685477' then
  wait = tonumber(first[2]) - now
end
if blocking and available and available >= n and (wait <= 0 or blocking - now < wait) then
  wait = blocking - now -- only claims hold it back: they may go first
end
if ARGV[5] == '1' and n > 1 then
  local life = tonumber(ARGV[2])
  if wait > 0 then
    life = wait
  end
  life = life + tonumber(ARGV[6])
  redis.call('zadd', KEYS[4], now + life, ARGV[4])
  redis.call('pexpire', KEYS[4], math.max(redis.call('pttl', KEYS[4]), life))
end
return reply(0, wait)
