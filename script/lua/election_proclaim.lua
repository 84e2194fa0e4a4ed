-- election_proclaim: publish VALUE as the leader's, if OWNER leads (holds
-- NAME and the leader key names it). The term and the leases are unchanged.
--
-- KEYS[1]  NAME
-- KEYS[2]  {NAME}:leader
-- KEYS[3]  leasehold_election__channel:{NAME}
-- ARGV[1]  OWNER
-- ARGV[2]  VALUE
-- ARGV[3]  election message, '1'
--
-- Returns 1 when VALUE is published, 0 when OWNER does not lead (then
-- nothing is written).
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 or redis.pcall('hget', KEYS[2], 'owner') ~= ARGV[1] then
  return 0
end
redis.call('hset', KEYS[2], 'value', ARGV[2])
redis.pcall('publish', KEYS[3], ARGV[3])
return 1
