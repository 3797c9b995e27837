-- fail: end an attempt in failure. KEYS: queue group, job, errors. Own
-- arguments: seq, token, error, retry in (µs), permanent (1|0).
-- Returns {'ok', new state, woken} or {error code}.
local qs, a = queues()
local q, jk, ek, seq = qs[1], KEYS[NK + 1], KEYS[NK + 2], ARGV[a]
local now, snow = now_us()
local e, v = fence(jk, ARGV[a + 1], 'at', 'ma', 'cr', 'ukk', 'uf', 'tn', 'g', 'vo', 'vb')
if e then
  return {e}
end
local at, ma, msg = tonumber(v[1] or '0'), tonumber(v[2] or '0'), ARGV[a + 2]
local nxt = 'retrying'
if v[3] == '1' then
  nxt = 'cancelled'
elseif ARGV[a + 4] == '1' or at >= ma then
  nxt = 'failed'
end
record_error(ek, at, snow, msg)
local more = with(leave_active(q, seq), {'le', msg})
local J = (v[6] or v[7]) and mkjob(q, seq, v[6], v[7], nil, v[8], v[9]) or nil
if final(nxt) then
  finish(q, jk, seq, nxt, snow, v[4], v[5], more, J, 'active')
else
  local retry = tonumber(ARGV[a + 3])
  local ra = n2s(now + math.max(retry, 0))
  redis.call('HSET', jk, unpack(with({'st', 'retrying', 'ra', ra, 'ua', snow}, more)))
  redis.call('ZADD', q.retrying, ra, seq)
  timed()
  if J then
    move(J, 'active', 'retrying')
  end
  if retry <= 0 then
    q.wake = true
  end
end
settle()
return {'ok', nxt, wake(qs)}
