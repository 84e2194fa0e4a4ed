-- fair_keep: keep the places of waiting OWNERs in the queue of the fair lock
-- NAME, one run for every waiter of a Client on the lock (its keeper's
-- round), instead of an attempt by each. It also does what each waiter's
-- attempt did for the queue: drop waiters at the head whose deadline has
-- passed, and tell the head when the lock is free or runs out before the
-- next round.
--
-- KEYS[1]  NAME                           hash: OWNER -> hold count
-- KEYS[2]  redisson_lock_queue:{NAME}     list: waiting owners, oldest first
-- KEYS[3]  redisson_lock_timeout:{NAME}   zset: waiting owner -> deadline (server clock, ms)
-- KEYS[4]  redisson_lock__channel:{NAME}  prefix of the per-waiter channels, PREFIX:OWNER
-- ARGV[1]  queue timeout, ms: each kept waiter's deadline becomes now + this
-- ARGV[2]  refresh interval, ms: the time to the next round
-- ARGV[3]  wake-up message, '0'
-- ARGV[4..] the waiting OWNERs (at most a thousand: Lua unpacks no more
--          than a few thousand values at once)
--
-- Returns the positions (1 for ARGV[4]) of the OWNERs with no place in the
-- queue, separated by spaces ("" when every one has one): each must try
-- again, which puts it at the tail. A place is only ever refreshed, never
-- made: ZADD XX, and only for an OWNER that has a deadline, since the zset
-- and the list change together in every script (ours and Redisson's).
-- Both keys then expire at the last deadline (lib/fair_expire.lua).
--
-- The reply is one string, as every script's (see lib/reply.lua), joined
-- here since its length varies.
--
-- Calls: kept 12, stale head 16, lock free 13, none kept 6
redis.replicate_commands() -- TIME before writes (Redis < 5); a no-op since 7.0
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

--!include fair_prune
--!include fair_tell_head
--!include fair_expire

queue_check(KEYS[2], KEYS[3]) -- keys of another type fail here, before the writes
prune(KEYS[2], KEYS[3], now)

local owners = {}
for i = 4, #ARGV do
  owners[#owners + 1] = ARGV[i]
end
local deadline = now + tonumber(ARGV[1])
local scores = redis.call('zmscore', KEYS[3], unpack(owners))
local kept, missing = {}, {}
for i, owner in ipairs(owners) do
  if scores[i] then
    kept[#kept + 1] = deadline
    kept[#kept + 1] = owner
  else
    missing[#missing + 1] = i
  end
end
if #kept > 0 then
  redis.call('zadd', KEYS[3], 'XX', unpack(kept))
  queue_expire(KEYS[2], KEYS[3], now)
end
-- Every round, as every attempt did: a head that missed its message, or
-- whose lock is about to run out without one (a holder that died), learns
-- it within a round.
tell_head(KEYS[1], KEYS[2], KEYS[4], ARGV[3], tonumber(ARGV[2]))
return table.concat(missing, ' ')
