-- fair_force_release: delete the fair lock NAME whoever holds it and tell the
-- head of the queue (Redisson's forceUnlock of RFairLock). The queue stays.
--
-- KEYS[1]  NAME
-- KEYS[2]  redisson_lock_queue:{NAME}
-- KEYS[3]  redisson_lock_timeout:{NAME}
-- KEYS[4]  redisson_lock__channel:{NAME}  prefix of the per-waiter channels
-- ARGV[1]  wake-up message, '0'
--
-- Returns 1 when a lock was deleted, 0 when there was none.
redis.replicate_commands()
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

--!include fair_prune

queue_check(KEYS[2], KEYS[3]) -- keys of another type fail here, before the writes
local deleted = redis.call('del', KEYS[1])
prune(KEYS[2], KEYS[3], now)
-- The lock is gone: the head, if any, is told whatever its refresh interval.
local head = redis.call('lindex', KEYS[2], 0)
if head then
  redis.pcall('publish', KEYS[4] .. ':' .. head, ARGV[1])
end
return deleted
