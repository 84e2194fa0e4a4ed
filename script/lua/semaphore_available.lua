-- semaphore_available: the permits of the semaphore NAME that an attempt
-- could take now, and its total: the permits available plus those whose
-- expiry has passed (the next attempt gives them back), and that plus the
-- permits held. It only reads (Redisson's availablePermits gives the expired
-- ones back first; the count is the same).
--
-- KEYS[1]  NAME             string: permits available
-- KEYS[2]  {NAME}:timeout   zset: permit id -> expiry (epoch ms)
--
-- Returns {available, total, set}: set is 1 when NAME holds a count, 0
-- when the semaphore was never set (then available is 0).
--!include semaphore
local available, taken, err = semaphore_read(KEYS[1], KEYS[2])
if err then
  return redis.error_reply('ERR ' .. err)
end
local expired = redis.call('zcount', KEYS[2], 0, semaphore_now())
if not available then
  return {expired, taken, 0}
end
return {available + expired, available + taken, 1}
