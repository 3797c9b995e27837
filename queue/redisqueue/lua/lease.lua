-- lease: promote due jobs, then lease up to max ready jobs. Own arguments:
-- max, lease length (µs), worker id, token base, promotion limit.
-- Returns {now, until, per lease {queue position, seq, token, job as it
-- was before the lease}, woken}: the caller applies the lease's changes
-- (state, attempt + 1, token, deadline, worker, start) to the job itself,
-- so each job costs one read and one write here.
local qs, a = queues()
local now, snow = now_us()
local max = tonumber(ARGV[a])
local until_ = n2s(now + tonumber(ARGV[a + 1]))
local worker, tokens, plimit = ARGV[a + 2], ARGV[a + 3], tonumber(ARGV[a + 4])

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

-- take leases one job and returns it, or nil when its hash is missing.
local function take(q, seq, tok)
  local jk = q.jp .. seq
  local f = redis.call('HGETALL', jk)
  if #f == 0 then
    return nil
  end
  local at, failed = 0, false
  for i = 1, #f, 2 do
    if f[i] == 'at' then
      at = tonumber(f[i + 1])
    elseif f[i] == 'le' then
      failed = true
    end
  end
  redis.call('HSET', jk, 'st', 'active', 'at', n2s(at + 1), 'tk', tok, 'lu', until_,
    'wk', worker, 'sa', snow, 'ua', snow)
  local errs = {}
  if failed then
    errs = redis.call('LRANGE', jk .. ':errors', 0, -1)
  end
  return {f, errs}
end

local promoted = 0
for _, q in ipairs(qs) do
  promoted = promoted + promote(q, 'scheduled') + promote(q, 'retrying')
end
local out, left, added = {}, {}, {}
for i = 1, #qs do
  left[i], added[i] = {}, {}
end
for _, p in ipairs(pick()) do
  if #out >= max then
    break
  end
  local i, seq = p[1], p[2]
  local tok = tokens .. '.' .. (#out + 1)
  local job = take(qs[i], seq, tok)
  local l = left[i]
  l[#l + 1] = seq
  if job then
    local ad = added[i]
    ad[#ad + 1] = until_
    ad[#ad + 1] = seq
    out[#out + 1] = {i, seq, tok, job}
  end
end
for i, q in ipairs(qs) do
  zrem(q.pending, left[i])
  local ad = added[i]
  for j = 1, #ad, 1000 do
    redis.call('ZADD', q.active, unpack(ad, j, math.min(j + 999, #ad)))
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
return {snow, until_, out, wake(qs)}
