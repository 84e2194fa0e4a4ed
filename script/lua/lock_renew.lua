-- lock_renew: extend the lease of OWNER on the lock NAME, if OWNER still
-- holds it. Used by the keeper's renewal round for rlock and fairqueue.
--
-- KEYS[1]  NAME
-- ARGV[1]  lease time, ms
-- ARGV[2]  OWNER
--
-- Returns 1 when renewed, 0 when OWNER no longer holds the lock.
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 1
end
return 0
