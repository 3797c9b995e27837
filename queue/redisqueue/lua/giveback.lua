-- giveback: end an attempt without spending it (snooze, requeue). KEYS:
-- queue group, job, errors. Own arguments: seq, token, next state
-- (pending|scheduled), delay (µs). Returns {'ok', new state, woken} or
-- {error code}.
local qs, a = queues()
local q, jk, seq = qs[1], KEYS[NK + 1], ARGV[a]
local now = now_us()
local e = holder(jk, ARGV[a + 1])
if e then
  return {e}
end
leave_active(q, jk, seq)
redis.call('HINCRBY', jk, 'at', -1)
local st = ARGV[a + 2]
if redis.call('HGET', jk, 'cr') == '1' then
  st = 'cancelled'
  finish(q, jk, seq, st, now)
else
  local ra = n2s(now + math.max(tonumber(ARGV[a + 3]), 0))
  redis.call('HSET', jk, 'st', st, 'ra', ra, 'ua', n2s(now))
  if st == 'pending' then
    add_pending(q, seq, redis.call('HGET', jk, 'pr') or '0')
  else
    redis.call('ZADD', q.scheduled, ra, seq)
  end
end
return {'ok', st, wake(qs)}
