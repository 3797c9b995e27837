-- cancel: cancel a job that has not finished. KEYS: queue group, job,
-- errors. Own arguments: seq. Returns {'ok', job} or {'nf'}.
local qs, a = queues()
local q, jk, seq = qs[1], KEYS[NK + 1], ARGV[a]
local now = now_us()
local st = redis.call('HGET', jk, 'st')
if not st then
  return {'nf'}
end
if st == 'active' then
  redis.call('HSET', jk, 'cr', '1', 'ua', n2s(now))
elseif not final(st) then
  redis.call('ZREM', q[st], seq)
  finish(q, jk, seq, 'cancelled', now)
end
return {'ok', read(jk, KEYS[NK + 2])}
