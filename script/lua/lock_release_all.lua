-- lock_release_all: give up every hold of OWNER on the reentrant lock NAME;
-- when that frees it, publish the unlock message. lock_release's release of
-- every hold without KEEP, alone: the path every lease's last release
-- takes, with nothing it does not read (no latch key: a repeat finds OWNER
-- gone and returns -1, see lock_release).
--
-- KEYS[1]  NAME
-- KEYS[2]  redisson_lock__channel:{NAME}
-- ARGV[1]  unlock message, '0'
-- ARGV[2]  OWNER
--
-- Returns 1 when OWNER's holds are given up and the lock is free, 0 when
-- another owner still holds it, -1 when OWNER did not hold it.
--
-- Calls: release all 3, not held 1, another holds 2
if redis.call('hdel', KEYS[1], ARGV[2]) == 0 then
  return -1
end
-- An emptied hash is gone; another field would be a foreign owner's.
if redis.call('exists', KEYS[1]) == 1 then
  return 0
end
redis.pcall('publish', KEYS[2], ARGV[1])
return 1
