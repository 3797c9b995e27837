-- delivery_prune: delete log entries recorded at or before now plus an
-- offset (negative), oldest first. Own arguments: outbox prefix, the
-- offset (µs), limit. Returns the number deleted.
--
-- The log is walked in sequence order, which is the order of recording,
-- and the walk stops at the first entry newer than the cut. An index by
-- time would cost every entry another sorted-set member (about 100 bytes)
-- only to serve entries recorded under a clock that went back; such an
-- entry holds the ones after it until it is old enough itself.
--
-- The filter indexes are named from the entry's event id, subscription
-- and job id as entries store them, unescaped: their keys are escaped here
-- (lib.lua's esc).
local _, a = queues()
local now = now_us()
local p, limit = ARGV[a], tonumber(ARGV[a + 2])
local cut = now + tonumber(ARGV[a + 1])
local old = redis.call('ZRANGE', p .. 'log', 0, limit - 1)
local gone = {}
for _, s in ipairs(old) do
  local dk = p .. 'delivery:' .. s
  local v = redis.call('HMGET', dk, 't', 'ev', 's', 'j')
  if v[1] and tonumber(v[1]) > cut then
    break
  end
  if v[2] then
    redis.call('ZREM', p .. 'log:event:' .. esc(v[2]), s)
  end
  if v[3] then
    redis.call('ZREM', p .. 'log:sub:' .. esc(v[3]), s)
  end
  if v[4] then
    redis.call('ZREM', p .. 'log:job:' .. esc(v[4]), s)
  end
  redis.call('DEL', dk)
  gone[#gone + 1] = s
end
zrem(p .. 'log', gone)
return #gone
