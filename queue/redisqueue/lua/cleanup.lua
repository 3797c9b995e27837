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
-- Finish tags at or behind the queue's virtual time say nothing a missing
-- one does not; an idle queue (no unfinished job) needs neither its tags
-- nor its virtual time: no job is left to order against them.
local idle = true
for _, st in ipairs({'pending', 'waiting', 'scheduled', 'retrying', 'active'}) do
  if redis.call('ZCARD', q[st]) > 0 then
    idle = false
  end
end
local f = redis.call('HGETALL', q.sched)
local v, old = 0, {}
for i = 1, #f, 2 do
  if f[i] == 'v' then
    v = tonumber(f[i + 1])
    if idle then old[#old + 1] = 'v' end
  end
end
for i = 1, #f, 2 do
  if string.sub(f[i], 1, 2) == 'f:' and (idle or tonumber(f[i + 1]) <= v) then
    old[#old + 1] = f[i]
  end
end
for i = 1, #old, 1000 do
  redis.call('HDEL', q.sched, unpack(old, i, math.min(i + 999, #old)))
end
return deleted
