-- rescue: recover jobs of one queue whose lease expired before now. Own
-- arguments: limit, max stalls. Returns {requeued, failed, cancelled, woken}.
local qs, a = queues()
local q = qs[1]
local now = now_us()
local limit, maxs = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
local expired = redis.call('ZRANGEBYSCORE', q.active, '-inf', '(' .. n2s(now), 'LIMIT', 0, limit)
local r, f, c = 0, 0, 0
for _, seq in ipairs(expired) do
  local jk = q.jp .. seq
  redis.call('ZREM', q.active, seq)
  if redis.call('EXISTS', jk) == 1 then
    local v = redis.call('HMGET', jk, 'cr', 'sl', 'at', 'pr')
    local stalls, at = tonumber(v[2] or '0') + 1, tonumber(v[3] or '0')
    redis.call('HDEL', jk, 'tk', 'lu', 'wk')
    redis.call('HSET', jk, 'sl', n2s(stalls), 'at', n2s(at - 1))
    if v[1] == '1' then
      finish(q, jk, seq, 'cancelled', now)
      c = c + 1
    elseif stalls >= maxs then
      local msg = string.format(
        'queue: job stalled %d times (its lease expired before the worker finished)', stalls)
      record_error(jk, jk .. ':errors', at, now, msg)
      finish(q, jk, seq, 'failed', now)
      f = f + 1
    else
      redis.call('HSET', jk, 'st', 'pending', 'ua', n2s(now))
      add_pending(q, seq, v[4] or '0')
      r = r + 1
    end
  end
end
return {r, f, c, wake(qs)}
