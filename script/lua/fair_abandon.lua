-- fair_abandon: remove OWNER, a waiter that gives up, from the queue of the
-- fair lock NAME, and tell the new head if it has to act (Redisson's
-- acquireFailed, without touching anyone else's deadline).
--
-- KEYS[1]  NAME
-- KEYS[2]  redisson_lock_queue:{NAME}
-- KEYS[3]  redisson_lock_timeout:{NAME}
-- KEYS[4]  redisson_lock__channel:{NAME}  prefix of the per-waiter channels
-- ARGV[1]  OWNER
-- ARGV[2]  refresh interval, ms
-- ARGV[3]  wake-up message, '0'
--
-- Returns the number of queue entries removed (0 or 1).
redis.replicate_commands()
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local owner = ARGV[1]
local refresh = tonumber(ARGV[2])

-- queue_check, prune and tell_head, shared by the fair scripts: lua/lib/,
-- spliced in at load.
--!include fair_prune
--!include fair_tell_head

queue_check(KEYS[2], KEYS[3]) -- keys of another type fail here, before the writes

-- A head that gives up may have been told the lock is free: the one after it
-- must hear instead, or the lock would sit free until that one's timer.
local was_head = redis.call('lindex', KEYS[2], 0) == owner
local removed = redis.call('lrem', KEYS[2], 0, owner)
redis.call('zrem', KEYS[3], owner)
local pruned = prune(KEYS[2], KEYS[3], now)
if was_head or pruned or redis.call('exists', KEYS[1]) == 0 then
  tell_head(KEYS[1], KEYS[2], KEYS[4], ARGV[3], refresh)
end
return removed
