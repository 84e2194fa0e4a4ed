-- lock_handoff: give up every hold of OWNER on the reentrant lock NAME and,
-- when that frees it, pass it at once to SUCCESSOR, a waiter of the same
-- client: the handoff costs one script and one round trip, not a release,
-- its message and the waiter's acquire (internal/handoff, the client's
-- turn on the lock). With ASK, it passes the lock only when nobody else
-- wants it: no other connection listens on its channel (PUBSUB NUMSUB
-- counts the releasing client's own, which its waiter holds), and no waiter
-- that does not listen is due to try before about ASK ms from now (its
-- mark, KEYS[4], written by lock_want: its PTTL is when that waiter's try
-- is due, plus the margin the mark holds). Otherwise it publishes, as
-- lock_release releases, and replies who wants the lock: the client then
-- yields (its waiters stand back) for the window the reply sets.
--
-- It releases as lock_release releases every hold (HDEL, EXISTS), and only
-- then, the lock freed, reads whether it may pass it. Nothing after that
-- first write can fail: the count, the mark and the fencing counter's INCR
-- are read with pcall, and a refusal (an ACL without PUBSUB NUMSUB, a
-- counter of another type or not an integer) makes no handoff, the release
-- going on as lock_release's. The reads come before the INCR: a counter
-- INCRed is always a handoff made, so no token is drawn for nothing. Redis
-- refuses a script for memory at its first write alone.
--
-- KEYS[1]  NAME
-- KEYS[2]  redisson_lock__channel:{NAME}
-- KEYS[3]  redisson_lock_token:{NAME}
-- KEYS[4]  leasehold_lock_wanted:{NAME}  the mark of a waiter that does not listen
-- ARGV[1]  unlock message, '0'
-- ARGV[2]  lease time, ms (SUCCESSOR's)
-- ARGV[3]  OWNER
-- ARGV[4]  SUCCESSOR (CLIENT_ID:LEASE_ID)
-- ARGV[5]  ASK, ms: how far ahead a marked waiter's try makes the release
--          publish; '-1': pass the lock without asking (the turn goes on)
--
-- Returns TOKEN, an integer of at least 10^15, when the lock passed to
--         SUCCESSOR with the fencing token TOKEN (the common case),
--         "2 TOKEN PENDING"  when it passed otherwise (a counter new or past
--                            2^53: TOKEN a decimal string; or PENDING 1: a
--                            marked waiter is due to try later than ASK ms),
--         "3 OTHERS MARK"    when OWNER's last hold was given up and the lock
--                            published because someone else wants it: OTHERS
--                            other connections listen on its channel, and a
--                            mark has MARK ms left (0: none),
--         1                  when the lock is free and published otherwise (a
--                            count or counter it could not read),
--         0                  when another owner still holds it,
--         -1                 when OWNER did not hold it.
-- The common case, a counter drawn from the clock, is lib/token_fast.lua,
-- inline, defining no function (each is a closure Lua makes on every run
-- that reaches it) and building no string.
--
-- Calls: not held 1, passed 6, passed asking 8, passed new counter 7, wanted 5, another holds 2
if redis.call('hdel', KEYS[1], ARGV[3]) == 0 then
  return -1
end
-- An emptied hash is gone; another field would be a foreign owner's.
if redis.call('exists', KEYS[1]) == 1 then
  return 0
end
local pending = 0
if ARGV[5] ~= '-1' then
  local count = redis.pcall('pubsub', 'numsub', KEYS[2])
  if count.err then
    redis.pcall('publish', KEYS[2], ARGV[1])
    return 1
  end
  local others, mark = math.max(count[2] - 1, 0), redis.pcall('pttl', KEYS[4])
  if type(mark) ~= 'number' or mark < 0 then
    mark = 0
  end
  local due = mark
  if mark > 0 then
    due = mark - (tonumber(redis.pcall('get', KEYS[4])) or 0)
  end
  if others > 0 or (mark > 0 and due <= tonumber(ARGV[5])) then
    redis.pcall('publish', KEYS[2], ARGV[1])
    return '3 ' .. string.format('%d', others) .. ' ' .. string.format('%d', mark)
  end
  if mark > 0 then
    pending = 1
  end
end
local n = redis.pcall('incr', KEYS[3])
if type(n) ~= 'number' then
  redis.pcall('publish', KEYS[2], ARGV[1])
  return 1
end
local token
--!include token_fast n KEYS[3] ARGV[2]
if token and pending == 0 then
  redis.call('hset', KEYS[1], ARGV[4], 1)
  redis.call('pexpire', KEYS[1], ARGV[2])
  return token
end
if not token then
--!include token
  token = token_next(KEYS[3], n, ARGV[2])
end
if type(token) == 'number' then
  token = string.format('%d', token)
end
redis.call('hset', KEYS[1], ARGV[4], 1)
redis.call('pexpire', KEYS[1], ARGV[2])
return '2 ' .. token .. ' ' .. pending
