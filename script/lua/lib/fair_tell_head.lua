-- fair_tell_head: tell_head(lock, queue, channel, message, refresh, except)
-- tells the head of a fair lock's queue (unless it is except) to try now,
-- when the lock is free or runs out before the head's refresh timer would
-- fire. Every script that frees the lock or changes the head calls this, so a
-- free lock with a queue always has a head that was told or whose timer fires.
--
-- Needs in scope: nothing but redis; the keys and arguments are parameters,
-- since the scripts number the channel prefix and the message differently.
-- lock     NAME, KEYS[1] of every fair script
-- queue    redisson_lock_queue:{NAME}, KEYS[2] of every fair script
-- channel  redisson_lock__channel:{NAME}, the prefix of the per-waiter
--          channels PREFIX:OWNER (KEYS[5] of fair_acquire, KEYS[4] of the others)
-- message  the wake-up message, '0'
-- refresh  the refresh interval, ms: the longest a waiter sleeps between attempts
-- except   an owner not to tell (the caller), or nil
local function tell_head(lock, queue, channel, message, refresh, except)
  local head = redis.call('lindex', queue, 0)
  if not head or head == except then
    return
  end
  local pttl = redis.call('pttl', lock)
  if pttl == -2 or (pttl >= 0 and pttl < refresh) then
    redis.pcall('publish', channel .. ':' .. head, message)
  end
end
