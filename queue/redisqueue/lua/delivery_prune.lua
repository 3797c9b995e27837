-- delivery_prune: delete log entries recorded at or before now plus an
-- offset (negative), oldest first. Own arguments: outbox prefix, the
-- offset (µs), limit. Returns the number deleted.
local _, a = queues()
local now = now_us()
local p, limit = ARGV[a], tonumber(ARGV[a + 2])
local cut = n2s(now + tonumber(ARGV[a + 1]))
local old = redis.call('ZRANGEBYSCORE', p .. 'log:at', '-inf', cut, 'LIMIT', 0, limit)
for _, s in ipairs(old) do
  local dk = p .. 'delivery:' .. s
  local v = redis.call('HMGET', dk, 'ev', 's', 'j')
  if v[1] then
    redis.call('ZREM', p .. 'log:event:' .. esc(v[1]), s)
  end
  if v[2] then
    redis.call('ZREM', p .. 'log:sub:' .. esc(v[2]), s)
  end
  if v[3] then
    redis.call('ZREM', p .. 'log:job:' .. esc(v[3]), s)
  end
  redis.call('DEL', dk)
end
zrem(p .. 'log', old)
zrem(p .. 'log:at', old)
return #old
