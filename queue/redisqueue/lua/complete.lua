-- complete: end an attempt in success. KEYS: queue group, job, errors.
-- Own arguments: seq, token, result. Returns {'ok'} or {error code}.
local qs, a = queues()
local q, jk, seq = qs[1], KEYS[NK + 1], ARGV[a]
local now = now_us()
local e = holder(jk, ARGV[a + 1])
if e then
  return {e}
end
leave_active(q, jk, seq)
if ARGV[a + 2] ~= '' then
  redis.call('HSET', jk, 'rs', ARGV[a + 2])
end
finish(q, jk, seq, 'completed', now)
return {'ok'}
