-- cleanup: delete finished jobs of one queue past their retention, oldest
-- first per state. Own arguments: limit, then the retention (µs) of
-- completed, failed and cancelled jobs, '' to keep forever. Returns the
-- number deleted.
local qs, a = queues()
local q = qs[1]
local now, snow = now_us()
local left, deleted = tonumber(ARGV[a]), 0
for i, st in ipairs({'completed', 'failed', 'cancelled'}) do
  local keep = ARGV[a + i]
  if keep ~= '' and left > 0 then
    local old = redis.call('ZRANGEBYSCORE', q[st], '-inf', n2s(now - tonumber(keep)),
      'LIMIT', 0, left)
    for _, seq in ipairs(old) do
      local jk = q.jp .. seq
      release_unique(redis.call('HGET', jk, 'ukk'), nil, seq, false)
      redis.call('DEL', jk, jk .. ':errors')
    end
    zrem(q[st], old)
    zrem(q.jobs, old)
    left = left - #old
    deleted = deleted + #old
  end
end
return deleted
