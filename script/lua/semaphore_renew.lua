-- semaphore_renew: extend the lease of the N permits of one lease of a
-- semaphore (lib/semaphore.lua) to a lease from now, by the server's clock,
-- if every one of them is still held. Used by the keeper's renewal round.
--
-- A permit past its expiry that nobody has given back yet is renewed: until
-- an attempt gives it back, nobody else can have it.
--
-- KEYS[1]  {NAME}:timeout   zset: permit id -> expiry (epoch ms)
-- ARGV[1]  lease time, ms
-- ARGV[2]  the lease's permit id prefix, 14 bytes
-- ARGV[3]  N, the lease's permits
--
-- Returns 1 when renewed, 0 when some permit of the lease is no longer held
-- (then nothing is written: the rest run out at their expiry).
--!include semaphore
local n = tonumber(ARGV[3])
for i = 0, n - 1 do
  if not redis.call('zscore', KEYS[1], permit_id(ARGV[2], i)) then
    return 0
  end
end
local expiry = semaphore_now() + tonumber(ARGV[1])
for i = 0, n - 1 do
  redis.call('zadd', KEYS[1], expiry, permit_id(ARGV[2], i))
end
return 1
