-- creategroup: store a new group. KEYS: the group's hash. Own arguments:
-- id, tenant, max concurrency, min interval (µs), TTL (µs), completion
-- kind, queue and payload, webhook (JSON). Returns {'ok', now, fields} or {'exists'}.
local _, a = queues()
local now, snow = now_us()
if redis.call('HEXISTS', KEYS[1], 'ca') == 1 then
  return {'exists'}
end
local id, ttl = ARGV[a], tonumber(ARGV[a + 4])
local h = {'ca', snow, 'mc', ARGV[a + 2], 'mi', ARGV[a + 3], 'ttl', ARGV[a + 4]}
for i, f in ipairs({'tn', 'ck', 'cq', 'cp', 'wh'}) do
  local v = ARGV[a + ({1, 5, 6, 7, 8})[i]]
  if v ~= '' then
    h[#h + 1] = f
    h[#h + 1] = v
  end
end
if ttl > 0 then
  h[#h + 1] = 'dl'
  h[#h + 1] = n2s(now + ttl)
  redis.call('ZADD', scoped().WAKE, n2s(now + ttl), 'x:' .. id)
  timed()
end
redis.call('HSET', KEYS[1], unpack(h))
return {'ok', snow, redis.call('HGETALL', KEYS[1])}
