-- election_renew: extend the lease of OWNER on the election's lock NAME and
-- of its leader key together, if OWNER still leads. Used by the keeper's
-- renewal round.
--
-- OWNER leads while it holds NAME and the leader key names it. When the
-- leader key is gone or another's (someone deleted it), the term is over:
-- OWNER's hold is given up too, so the next campaigner need not wait for it
-- to run out. When NAME no longer holds OWNER (deleted, or expired) and its
-- leader key is left, the key goes. Either way the term is over, and
-- observers are told, since a deletion publishes nothing.
--
-- KEYS[1]  NAME
-- KEYS[2]  {NAME}:leader
-- KEYS[3]  redisson_lock__channel:{NAME}
-- KEYS[4]  leasehold_election__channel:{NAME}
-- ARGV[1]  lease time, ms
-- ARGV[2]  OWNER
-- ARGV[3]  unlock message, '0'
-- ARGV[4]  election message, '1'
--
-- Returns 1 when renewed, 0 when OWNER no longer leads.
local mine = redis.pcall('hget', KEYS[2], 'owner') == ARGV[2]
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  if mine then
    redis.call('pexpire', KEYS[1], ARGV[1])
    redis.call('pexpire', KEYS[2], ARGV[1])
    return 1
  end
  redis.call('hdel', KEYS[1], ARGV[2])
  if redis.call('exists', KEYS[1]) == 0 then
    redis.pcall('publish', KEYS[3], ARGV[3])
  end
elseif mine then
  redis.call('del', KEYS[2])
end
redis.pcall('publish', KEYS[4], ARGV[4])
return 0
