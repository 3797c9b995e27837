-- Releases a lease, or counts live leases when ARGV[2] is "".
--
-- KEYS[1]  the lease sorted set.
-- ARGV[1]  the time in microseconds, or "" to read the server's TIME.
-- ARGV[2]  the lease ID to release, or "" to count.
--
-- Reply: 1 or 0 (released or not held), or the number of live leases.

local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if ARGV[2] == '' then return redis.call('ZCARD', KEYS[1]) end
return redis.call('ZREM', KEYS[1], ARGV[2])
