-- cancel: cancel a job that has not finished. KEYS: queue group, job,
-- errors. Own arguments: seq. Returns {'ok', job} or {'nf'}.
local qs, a = queues()
local q, jk, seq = qs[1], KEYS[NK + 1], ARGV[a]
local now, snow = now_us()
local v = redis.call('HMGET', jk, 'st', 'ukk', 'uf', 'tn', 'g', 'vo', 'vb')
local st = v[1]
if not st then
  return {'nf'}
end
if st == 'active' then
  redis.call('HSET', jk, 'cr', '1', 'ua', snow)
elseif not final(st) then
  local J = mkjob(q, seq, v[4], v[5], nil, v[6], v[7])
  redis.call('ZREM', q[st], qmember(J, st))
  finish(q, jk, seq, 'cancelled', snow, v[2], v[3], nil, J, st)
  settle()
  wake(qs)
end
return {'ok', read(jk, KEYS[NK + 2])}
