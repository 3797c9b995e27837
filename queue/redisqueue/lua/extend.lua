-- extend: renew a lease. KEYS: queue group, job, errors. Own arguments:
-- seq, token, lease length (µs). Returns {'ok', until, cancel requested}
-- or {error code}.
local qs, a = queues()
local q, jk = qs[1], KEYS[NK + 1]
local now, snow = now_us()
local e, v = fence(jk, ARGV[a + 1], 'cr')
if e then
  return {e}
end
local u = n2s(now + tonumber(ARGV[a + 2]))
redis.call('HSET', jk, 'lu', u, 'ua', snow)
redis.call('ZADD', q.active, u, ARGV[a])
return {'ok', u, v[1] or '0'}
