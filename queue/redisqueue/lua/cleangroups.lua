-- cleangroups: delete groups done at least keep (µs) ago, oldest first,
-- at most limit, with their counts and sets. Own arguments: keep, limit.
-- Returns the number deleted.
local qs, a = queues()
local now = now_us()
local X = scoped()
local ids = redis.call('ZRANGEBYSCORE', X.DONE, '-inf', n2s(now - tonumber(ARGV[a])), 'LIMIT', 0,
  tonumber(ARGV[a + 1]))
for _, id in ipairs(ids) do
  local k = X.gkey(id)
  redis.call('DEL', k, k .. ':pending', k .. ':waiting', k .. ':open')
end
if #ids > 0 then
  redis.call('ZREM', X.DONE, unpack(ids))
end
return #ids
