-- extend: renew a lease. KEYS: queue group, job, errors. Own arguments:
-- seq, token, lease length (µs). Returns {'ok', until, cancel requested}
-- or {error code}.
local qs, a = queues()
local q, jk = qs[1], KEYS[NK + 1]
local now = now_us()
local e = holder(jk, ARGV[a + 1])
if e then
  return {e}
end
local u = n2s(now + tonumber(ARGV[a + 2]))
redis.call('HSET', jk, 'lu', u, 'ua', n2s(now))
redis.call('ZADD', q.active, u, ARGV[a])
return {'ok', u, redis.call('HGET', jk, 'cr') or '0'}
