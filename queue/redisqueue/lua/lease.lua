-- lease: promote due jobs, then lease up to max ready jobs. Own arguments:
-- max, lease length (µs), worker id, token base, promotion limit.
-- Returns {per lease {queue position, seq, token, job}, woken}.
local qs, a = queues()
local now = now_us()
local max = tonumber(ARGV[a])
local until_ = n2s(now + tonumber(ARGV[a + 1]))
local worker, tokens, plimit = ARGV[a + 2], ARGV[a + 3], tonumber(ARGV[a + 4])
local snow = n2s(now)

-- promote makes due jobs of one index (scheduled or retrying) pending,
-- touching only the due ones, oldest first.
local function promote(q, set)
  local due = redis.call('ZRANGEBYSCORE', q[set], '-inf', snow, 'LIMIT', 0, plimit)
  for _, seq in ipairs(due) do
    local jk = q.jp .. seq
    local pr = redis.call('HGET', jk, 'pr')
    if pr then
      redis.call('HSET', jk, 'st', 'pending', 'ua', snow)
      redis.call('ZADD', q.pending, pr, seq)
    end
  end
  zrem(q[set], due)
  return #due
end

-- pick returns up to max {queue position, seq}: the best of each queue,
-- merged by priority, then sequence.
local function pick()
  local c = {}
  for i, q in ipairs(qs) do
    local r = redis.call('ZRANGE', q.pending, 0, max - 1, 'WITHSCORES')
    for j = 1, #r, 2 do
      c[#c + 1] = {i, r[j], tonumber(r[j + 1])}
    end
  end
  if #qs > 1 then
    table.sort(c, function(x, y)
      if x[3] ~= y[3] then return x[3] < y[3] end
      if x[2] ~= y[2] then return x[2] < y[2] end
      return x[1] < y[1]
    end)
  end
  return c
end

local promoted = 0
for _, q in ipairs(qs) do
  promoted = promoted + promote(q, 'scheduled') + promote(q, 'retrying')
end
local out = {}
for _, p in ipairs(pick()) do
  if #out >= max then
    break
  end
  local q, seq = qs[p[1]], p[2]
  local jk = q.jp .. seq
  redis.call('ZREM', q.pending, seq)
  if redis.call('EXISTS', jk) == 1 then
    local tok = tokens .. '.' .. (#out + 1)
    redis.call('HINCRBY', jk, 'at', 1)
    redis.call('HSET', jk, 'st', 'active', 'tk', tok, 'lu', until_, 'wk', worker,
      'sa', snow, 'ua', snow)
    redis.call('ZADD', q.active, until_, seq)
    out[#out + 1] = {p[1], seq, tok, read(jk, jk .. ':errors')}
  end
end
-- Promoted jobs this call could not take are ready for other workers.
if promoted > 0 then
  for _, q in ipairs(qs) do
    if redis.call('ZCARD', q.pending) > 0 then
      q.wake = true
    end
  end
end
return {out, wake(qs)}
