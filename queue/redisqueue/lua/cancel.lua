-- cancel: cancel a job that has not finished. KEYS: queue group, job,
-- errors. Own arguments: seq. Returns {'ok', job} or {'nf'}.
local qs, a = queues()
local q, jk, seq = qs[1], KEYS[NK + 1], ARGV[a]
local now, snow = now_us()
local v = redis.call('HMGET', jk, 'st', 'ukk', 'uf')
local st = v[1]
if not st then
  return {'nf'}
end
if st == 'active' then
  redis.call('HSET', jk, 'cr', '1', 'ua', snow)
elseif not final(st) then
  redis.call('ZREM', q[st], seq)
  finish(q, jk, seq, 'cancelled', snow, v[2], v[3])
end
return {'ok', read(jk, KEYS[NK + 2])}
