-- giveback: end an attempt without spending it (snooze, requeue). KEYS:
-- queue group, job, errors. Own arguments: seq, token, next state
-- (pending|scheduled), delay (µs). Returns {'ok', new state, woken} or
-- {error code}.
local qs, a = queues()
local q, jk, seq = qs[1], KEYS[NK + 1], ARGV[a]
local now, snow = now_us()
local e, v = fence(jk, ARGV[a + 1], 'at', 'cr', 'pr', 'ukk', 'uf', 'tn', 'g', 'vo', 'vb')
if e then
  return {e}
end
local more = with(leave_active(q, seq), {'at', tostring(tonumber(v[1] or '0') - 1)})
local st = ARGV[a + 2]
local J = mkjob(q, seq, v[6], v[7], v[3], v[8], v[9])
if v[2] == '1' then
  st = 'cancelled'
  finish(q, jk, seq, st, snow, v[4], v[5], more, J, 'active')
else
  local ra = n2s(now + math.max(tonumber(ARGV[a + 3]), 0))
  local h = with({'ra', ra, 'ua', snow}, more)
  if st == 'pending' then
    st = ready(J, 'active', h)
  else
    with(h, {'st', st})
    redis.call('ZADD', q.scheduled, ra, seq)
    timed()
    move(J, 'active', st)
  end
  redis.call('HSET', jk, unpack(h))
end
settle()
return {'ok', st, wake(qs)}
