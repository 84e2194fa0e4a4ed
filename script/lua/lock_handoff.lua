-- lock_handoff: give up every hold of OWNER on the reentrant lock NAME and,
-- when that frees it and nobody but the releasing client listens on its
-- channel, pass it at once to SUCCESSOR, a waiter of the same client: the
-- handoff costs one script and one round trip, not a release, its message
-- and the waiter's acquire. When another client listens (another process, a
-- Redisson client), the lock is released as lock_release releases it, with
-- the unlock message, unless ARGV[5] is '1': the releasing client passes
-- over the other listeners then, and bounds how many times in a row it does
-- (a waiter elsewhere competes for the next release with a message).
--
-- The releasing client is subscribed to the channel (its waiter is), so the
-- channel's count of subscribed connections is 1 when it alone listens.
-- It releases as lock_release releases every hold (HDEL, EXISTS), and only
-- then, the lock freed, reads whether it may pass it. Nothing after that
-- first write can fail: the count and the fencing counter's INCR are made
-- with pcall, and a refusal of either (an ACL without PUBSUB NUMSUB, a
-- counter of another type or not an integer) makes no handoff, the release
-- going on as lock_release's. The count comes first: a counter INCRed is
-- always a handoff made, so no token is drawn for nothing. Redis refuses a
-- script for memory at its first write alone.
--
-- KEYS[1]  NAME
-- KEYS[2]  redisson_lock__channel:{NAME}
-- KEYS[3]  redisson_lock_token:{NAME}
-- ARGV[1]  unlock message, '0'
-- ARGV[2]  lease time, ms (SUCCESSOR's)
-- ARGV[3]  OWNER
-- ARGV[4]  SUCCESSOR (CLIENT_ID:LEASE_ID)
-- ARGV[5]  '1': pass the lock whoever else listens (no count is made), '0': only
--          when nobody but the releasing client does
--
-- Returns TOKEN, an integer of at least 10^15, or "2 TOKEN" (a counter
-- new or past 2^53), when the lock passed to SUCCESSOR with the fencing
-- token TOKEN, 1 when OWNER's last hold was given up and the lock is free
-- (the message published), 0 when another owner still holds it, -1 when
-- OWNER did not hold it. The common case, a counter drawn from the clock
-- (lib/token.lua), is inline, defining no function (each is a closure Lua
-- makes on every run that reaches it) and building no string.
--
-- Calls: not held 1, passed 7, passed new counter 8, passed over 6, another listens 4, another holds 2
if redis.call('hdel', KEYS[1], ARGV[3]) == 0 then
  return -1
end
-- An emptied hash is gone; another field would be a foreign owner's.
if redis.call('exists', KEYS[1]) == 1 then
  return 0
end
local n
if ARGV[5] == '1' then
  n = redis.pcall('incr', KEYS[3])
else
  local count = redis.pcall('pubsub', 'numsub', KEYS[2])
  n = not count.err and count[2] < 2 and redis.pcall('incr', KEYS[3])
end
if type(n) ~= 'number' then
  redis.pcall('publish', KEYS[2], ARGV[1])
  return 1
end
if n >= 1e15 and n < 9007199254740992 then
  redis.call('pexpire', KEYS[3], ARGV[2])
  redis.call('hset', KEYS[1], ARGV[4], 1)
  redis.call('pexpire', KEYS[1], ARGV[2])
  return n
end
--!include reply
--!include token
local token = token_next(KEYS[3], n, ARGV[2])
redis.call('hset', KEYS[1], ARGV[4], 1)
redis.call('pexpire', KEYS[1], ARGV[2])
return reply(2, token)
