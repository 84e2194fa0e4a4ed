-- lock_force_release: delete the lock NAME whoever holds it, and publish the
-- unlock message so waiters wake (Redisson's forceUnlock).
--
-- KEYS[1]  NAME
-- KEYS[2]  redisson_lock__channel:{NAME}
-- ARGV[1]  unlock message, '0'
--
-- Returns 1 when a lock was deleted, 0 when there was none.
if redis.call('del', KEYS[1]) == 1 then
  redis.pcall('publish', KEYS[2], ARGV[1])
  return 1
end
return 0
