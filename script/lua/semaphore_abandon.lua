-- semaphore_abandon: withdraw the claim of a waiter for several permits of
-- the semaphore NAME that stops waiting (see semaphore_acquire). Smaller
-- takers it held back may go now, and nothing else would tell them: publish
-- the permits available, if any.
--
-- KEYS[1]  leasehold_semaphore_claims:{NAME}   zset: waiter OWNER:N -> claim expiry
-- KEYS[2]  NAME                                string: permits available
-- KEYS[3]  redisson_sc:{NAME}                  channel
-- ARGV[1]  the waiter's claim, OWNER:N
--
-- Returns 1 when the waiter had a claim, 0 when it had none.
-- Everything that can fail fails before the first write.
local value = redis.call('get', KEYS[2])
if redis.call('zrem', KEYS[1], ARGV[1]) == 0 then
  return 0
end
if value and tonumber(value) and tonumber(value) > 0 then
  redis.pcall('publish', KEYS[3], value)
end
return 1
