-- fair_prune: prune(queue, timeouts, now) drops the waiters at the head of a
-- fair lock's queue whose deadline has passed (or that have none): they
-- stopped asking. It returns whether it dropped any, and the head it left
-- (nil for an empty queue).
--
-- queue_check(queue, timeouts) reads both keys, so that one of another type
-- fails there: call it before the script's first write, since prune may read
-- either key after a write (the timeouts only when the queue has a head).
--
-- Only the head is looked at: a stale entry further back blocks nobody until
-- it reaches the head, and this keeps each attempt O(1) amortised, each stale
-- entry being removed once.
--
-- Needs in scope: nothing but redis; the keys and the clock are parameters.
-- queue     redisson_lock_queue:{NAME}, KEYS[2] of every fair script
-- timeouts  redisson_lock_timeout:{NAME}, KEYS[3] of every fair script
-- now       the server's clock (TIME), ms
local function queue_check(queue, timeouts)
  redis.call('llen', queue)
  redis.call('zcard', timeouts)
end

local function prune(queue, timeouts, now)
  local pruned = false
  while true do
    local head = redis.call('lindex', queue, 0)
    if not head then
      return pruned, nil
    end
    local deadline = redis.call('zscore', timeouts, head)
    if deadline and tonumber(deadline) > now then
      return pruned, head
    end
    redis.call('lpop', queue)
    redis.call('zrem', timeouts, head)
    pruned = true
  end
end
