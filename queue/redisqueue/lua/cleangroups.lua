-- cleangroups: delete groups that ended at least keep (µs) ago (see
-- scope.lua's ended), oldest first, at most limit, with their counts and
-- sets. The done set is scored by when each group was done; a group found
-- there that has not ended (its completion job has not finished) or ended
-- too recently is moved to its end, or to now while unknown, as
-- cleanup.lua does with jobs. Own arguments: keep, limit. Returns the
-- number deleted.
local qs, a = queues()
local now, snow = now_us()
local X = scoped()
local cut = now - tonumber(ARGV[a])
local ids = redis.call('ZRANGEBYSCORE', X.DONE, '-inf', n2s(cut), 'LIMIT', 0, tonumber(ARGV[a + 1]))
local gone = {}
for _, id in ipairs(ids) do
  local e = X.ended(id)
  if e == nil then
    redis.call('ZADD', X.DONE, snow, id)
  elseif e > cut then
    redis.call('ZADD', X.DONE, n2s(e), id)
  else
    local k = X.gkey(id)
    redis.call('DEL', k, k .. ':pending', k .. ':waiting', k .. ':open')
    gone[#gone + 1] = id
  end
end
if #gone > 0 then
  redis.call('ZREM', X.DONE, unpack(gone))
end
return #gone
