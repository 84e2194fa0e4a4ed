-- fair_expire: queue_expire(queue, timeouts, now) makes a fair lock's queue
-- and timeouts expire at the last deadline in the queue, when every place in
-- it is stale: a waiter that dies, or whose Client closes, leaves no key
-- behind for longer than its queue timeout, even where no fair script runs
-- again (an rlock holding the name). Call it after writing a deadline;
-- removing one never needs a later expiry. Redisson sets no expiry on these
-- keys: its waiters' deadlines are covered from the next one a leasehold
-- waiter writes.
--
-- Needs in scope: nothing but redis; the keys and the clock are parameters.
-- queue     redisson_lock_queue:{NAME}, KEYS[2] of every fair script
-- timeouts  redisson_lock_timeout:{NAME}, KEYS[3] of every fair script
-- now       the server's clock (TIME), ms
local function queue_expire(queue, timeouts, now)
  local last = redis.call('zrange', timeouts, -1, -1, 'WITHSCORES')
  if last[2] and tonumber(last[2]) > now then
    local ttl = tonumber(last[2]) - now
    redis.call('pexpire', queue, ttl)
    redis.call('pexpire', timeouts, ttl)
  end
end
