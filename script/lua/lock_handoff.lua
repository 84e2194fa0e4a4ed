-- lock_handoff: give up every hold of OWNER on the reentrant lock NAME and,
-- when that frees it and nobody but the releasing client listens on its
-- channel, pass it at once to SUCCESSOR, a waiter of the same client: the
-- handoff costs one script and one round trip, not a release, its message
-- and the waiter's acquire. When another client listens (another process, a
-- Redisson client), the lock is released as lock_release releases it, with
-- the unlock message, so that a waiter elsewhere is never passed over by it.
--
-- The releasing client is subscribed to the channel (its waiter is), so the
-- channel's count of subscribed connections is 1 when it alone listens.
-- Everything that can fail comes before the first write (the DEL): the
-- type of NAME (HEXISTS), the fencing counter, read with pcall: one that a
-- draw could not raise at once (of another type, not a plain counter below
-- 10^18) makes no handoff, and the release goes on as lock_release's.
--
-- KEYS[1]  NAME
-- KEYS[2]  redisson_lock__channel:{NAME}
-- KEYS[3]  redisson_lock_token:{NAME}
-- ARGV[1]  unlock message, '0'
-- ARGV[2]  lease time, ms (SUCCESSOR's)
-- ARGV[3]  OWNER
-- ARGV[4]  SUCCESSOR (CLIENT_ID:LEASE_ID)
--
-- Returns "2 TOKEN" when the lock passed to SUCCESSOR with the fencing token
-- TOKEN, 1 when OWNER's last hold was given up and the lock is free (the
-- message published), 0 when another owner still holds it, -1 when OWNER
-- did not hold it.
--
-- Calls: not held 1, passed 9, passed new counter 10, another listens 6, another holds 3
--!include reply
--!include token
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return -1
end
if redis.call('hlen', KEYS[1]) > 1 then
  redis.call('hdel', KEYS[1], ARGV[3])
  return 0
end
-- A count refused (an ACL without PUBSUB NUMSUB) counts as another listening.
local count = redis.pcall('pubsub', 'numsub', KEYS[2])
local listeners = count.err and 2 or count[2]
local counter = redis.pcall('get', KEYS[3])
local plain = counter == false or (type(counter) == 'string' and #counter < 19 and string.match(counter, '^%d+$'))
redis.call('del', KEYS[1])
if listeners > 1 or not plain then
  redis.pcall('publish', KEYS[2], ARGV[1])
  return 1
end
local token = token_draw(KEYS[3], ARGV[2])
redis.call('hset', KEYS[1], ARGV[4], 1)
redis.call('pexpire', KEYS[1], ARGV[2])
return reply(2, token)
