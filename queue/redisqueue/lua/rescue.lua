-- rescue: recover jobs of one queue whose lease expired before now. Own
-- arguments: limit, max stalls. Returns {requeued, failed, cancelled, woken}.
local qs, a = queues()
local q = qs[1]
local now, snow = now_us()
local limit, maxs = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
local expired = redis.call('ZRANGEBYSCORE', q.active, '-inf', '(' .. snow, 'LIMIT', 0, limit)
zrem(q.active, expired)
local r, f, c = 0, 0, 0
for _, seq in ipairs(expired) do
  local jk = q.jp .. seq
  local v = redis.call('HMGET', jk, 'st', 'cr', 'sl', 'at', 'pr', 'ukk', 'uf', 'tn', 'g', 'vo', 'vb')
  if v[1] then
    local stalls, at = tonumber(v[3] or '0') + 1, tonumber(v[4] or '0')
    local more = {'sl', tostring(stalls), 'at', tostring(at - 1), 'tk', '', 'lu', '', 'wk', ''}
    local J = mkjob(q, seq, v[8], v[9], v[5], v[10], v[11])
    if v[2] == '1' then
      finish(q, jk, seq, 'cancelled', snow, v[6], v[7], more, J, 'active')
      c = c + 1
    elseif stalls >= maxs then
      local msg = string.format(
        'queue: job stalled %d times (its lease expired before the worker finished)', stalls)
      record_error(jk .. ':errors', at, snow, msg)
      more[#more + 1] = 'le'
      more[#more + 1] = msg
      finish(q, jk, seq, 'failed', snow, v[6], v[7], more, J, 'active')
      f = f + 1
    else
      local h = with({'ua', snow}, more)
      ready(J, 'active', h)
      redis.call('HSET', jk, unpack(h))
      r = r + 1
    end
  end
end
settle()
return {r, f, c, wake(qs)}
