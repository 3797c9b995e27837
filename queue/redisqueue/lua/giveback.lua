-- giveback: end an attempt without spending it (snooze, requeue). KEYS:
-- queue group, job, errors. Own arguments: seq, token, next state
-- (pending|scheduled), delay (µs). Returns {'ok', new state, woken} or
-- {error code}.
local qs, a = queues()
local q, jk, seq = qs[1], KEYS[NK + 1], ARGV[a]
local now, snow = now_us()
local e, v = fence(jk, ARGV[a + 1], 'at', 'cr', 'pr', 'ukk', 'uf')
if e then
  return {e}
end
local more = with(leave_active(q, seq), {'at', tostring(tonumber(v[1] or '0') - 1)})
local st = ARGV[a + 2]
if v[2] == '1' then
  st = 'cancelled'
  finish(q, jk, seq, st, snow, v[4], v[5], more)
else
  local ra = n2s(now + math.max(tonumber(ARGV[a + 3]), 0))
  redis.call('HSET', jk, unpack(with({'st', st, 'ra', ra, 'ua', snow}, more)))
  if st == 'pending' then
    add_pending(q, seq, v[3] or '0')
  else
    redis.call('ZADD', q.scheduled, ra, seq)
  end
end
return {'ok', st, wake(qs)}
