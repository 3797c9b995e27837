-- Resets a subject: forgets its counters and its in-flight leases in one
-- step, so no decision sees half a reset.
--
-- KEYS[1]   the lease sorted set.
-- KEYS[2..] the counters to delete.
-- ARGV[1]   the time in microseconds, or "" to read the server's TIME.
--
-- Reply: the live leases dropped plus the counters deleted.

local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local removed = redis.call('ZCARD', KEYS[1])
redis.call('DEL', KEYS[1])
if #KEYS > 1 then
  removed = removed + redis.call('DEL', unpack(KEYS, 2))
end
return removed
