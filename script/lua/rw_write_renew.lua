-- rw_write_renew: extend the lease of the writer OWNER on the read-write
-- lock NAME, if it still holds the write lock. The hash keeps a longer TTL
-- if it has one (a read taken under the write lease with a longer lease).
--
-- KEYS[1]  NAME
-- ARGV[1]  lease time, ms
-- ARGV[2]  OWNER:write
--
-- Returns 1 when renewed, 0 when OWNER no longer holds the write lock.
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[1])))
  return 1
end
return 0
