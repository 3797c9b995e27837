-- lease: promote due jobs, do the scheduler's due work, then lease up to
-- max ready jobs of the queues not paused. Own arguments: max, lease
-- length (µs), worker id, token base, promotion limit.
-- Returns {now, until, per lease {queue position, seq, token, job as it
-- was before the lease}, woken, idle until (see idle_until)}: the caller applies the lease's changes
-- (state, attempt + 1, token, deadline, worker, start) to the job itself,
-- so each job costs one read and one write here.
local qs, a = queues()
local now, snow = now_us()
local max = tonumber(ARGV[a])
local until_ = n2s(now + tonumber(ARGV[a + 1]))
local worker, tokens, plimit = ARGV[a + 2], ARGV[a + 3], tonumber(ARGV[a + 4])

-- promote makes the due jobs of a queue ready (scheduled and retrying
-- alike, by due time then sequence, as every store does), touching only
-- the due ones. It looks at each set's head first: mostly nothing is
-- due, and the head is what idle_until needs then (q.next, the earliest
-- due time left; nil when something was due and the rest is unknown).
local function promote(q)
  local due = {}
  q.next = math.huge
  for _, set in ipairs({'scheduled', 'retrying'}) do
    local h = redis.call('ZRANGE', q[set], 0, 0, 'WITHSCORES')
    if h[2] and tonumber(h[2]) > now then
      if q.next then
        q.next = math.min(q.next, tonumber(h[2]))
      end
    elseif h[2] then
      q.next = nil
      local r = redis.call('ZRANGEBYSCORE', q[set], '-inf', snow, 'WITHSCORES', 'LIMIT', 0, plimit)
      for i = 1, #r, 2 do
        due[#due + 1] = {tonumber(r[i + 1]), r[i], set}
      end
    end
  end
  if #due == 0 then
    return 0
  end
  table.sort(due, function(x, y)
    if x[1] ~= y[1] then return x[1] < y[1] end
    return x[2] < y[2]
  end)
  local gone = {scheduled = {}, retrying = {}}
  for i = 1, math.min(#due, plimit) do
    local seq, set = due[i][2], due[i][3]
    local jk = q.jp .. seq
    local v = redis.call('HMGET', jk, 'st', 'tn', 'g', 'pr', 'vo', 'vb')
    if v[1] then
      local h = {'ua', snow}
      ready(mkjob(q, seq, v[2], v[3], v[4], v[5], v[6]), set, h)
      redis.call('HSET', jk, unpack(h))
    end
    local g = gone[set]
    g[#g + 1] = seq
  end
  zrem(q.scheduled, gone.scheduled)
  zrem(q.retrying, gone.retrying)
  return math.min(#due, plimit)
end

-- candidates returns up to n {queue position, member, band} of each
-- queue not paused, merged by band, then member (rank, sequence).
local function candidates(n)
  local c = {}
  for i, q in ipairs(qs) do
    if not q.paused_now then
      local r = redis.call('ZRANGE', q.pending, 0, n - 1, 'WITHSCORES')
      for j = 1, #r, 2 do
        c[#c + 1] = {i, r[j], tonumber(r[j + 1])}
      end
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

-- admit returns nil when the job's tenant and group let it start now, or
-- the scope that holds it back. Counts of active jobs include the jobs
-- this call has leased already.
local function admit(J)
  if P == '' then
    return nil
  end
  local X = scoped()
  local tenant, group, counts, wake_at, blocked_until = X.tenant, X.group, X.counts, X.wake_at,
    X.blocked_until
  if J.tn then
    local t = tenant(J.tn)
    if t.pu > now then
      wake_at('t:' .. J.tn, t.pu)
      return 'tenant'
    end
    if t.l >= 0 and counts(t.k, 'n:active')[1] >= t.l then
      return 'tenant'
    end
  end
  if J.g then
    local g = group(J.g)
    if g then
      local u = blocked_until(g)
      if u > now then
        wake_at('g:' .. J.g, u)
        return 'group'
      end
      if g.mc > 0 and counts(g.k, 'n:active')[1] >= g.mc then
        return 'group'
      end
    end
  end
  return nil
end

-- started records a start in the job's group: with a crawl delay, its
-- last start, and a wake when the delay ends.
local function started(J)
  local g = J.g and P ~= '' and scoped().group(J.g)
  if g and g.mi > 0 then
    g.ls = now
    redis.call('HSET', g.k, 'ls', snow)
    S.wake_at('g:' .. J.g, now + g.mi)
  end
end

-- TAKE names the fields take reads from a job's hash.
local TAKE = {at = 1, le = 2, st = 3, tn = 4, g = 5, pr = 6, vo = 7, vb = 8, vs = 9, k = 10}

-- take leases one job and returns it; nil when its hash is missing or it
-- is not pending, false when its scope holds it back (it moved to waiting).
local function take(q, i, m, tok)
  local seq = string.sub(m, -16)
  local jk = q.jp .. seq
  local f = redis.call('HGETALL', jk)
  if #f == 0 then
    return nil
  end
  local v = {}
  for k = 1, #f, 2 do
    local i = TAKE[f[k]]
    if i then
      v[i] = f[k + 1]
    end
  end
  local at, failed, st, tn, g, pr, vo, vb = tonumber(v[1] or '0'), v[2] ~= nil, v[3], v[4], v[5],
    v[6] or '0', v[7], v[8]
  if st ~= 'pending' then
    return nil
  end
  local J = (tn or g) and mkjob(q, seq, tn, g, pr, vo, vb)
  if J and vo and admit(J) then
    S.hold(J)
    return false
  end
  if J then
    -- Its complete needs the scheduler: lean.go's tokenScoped.
    tok = tok .. 's'
  end
  redis.call('HSET', jk, 'st', 'active', 'at', n2s(at + 1), 'tk', tok, 'lu', until_,
    'wk', worker, 'sa', snow, 'ua', snow)
  log_job(q, seq, 'job.started', 'active', snow, {k = v[10], tn = tn, g = g, at = n2s(at + 1)})
  if J then
    move(J, 'pending', 'active')
    started(J)
  end
  local start = v[9] or vo
  if start then
    local s = qsched(q)
    s.v = math.max(s.v, tonumber(start))
  end
  local errs = {}
  if failed then
    errs = redis.call('LRANGE', jk .. ':errors', 0, -1)
  end
  return {f, errs}, tok
end

local promoted = 0
for _, q in ipairs(qs) do
  promoted = promoted + promote(q)
  local pu = redis.call('GET', q.paused)
  q.paused_now = pu and tonumber(pu) > now
end
maintain()
settle()

-- Up to four rounds: jobs held back move to waiting, so a later round
-- sees the next candidates.
local out = {}
for round = 1, 4 do
  local want = max - #out
  local left, added = {}, {}
  for i = 1, #qs do
    left[i], added[i] = {}, {}
  end
  local c = candidates(want)
  local heldn = 0
  for _, p in ipairs(c) do
    if #out >= max then
      break
    end
    local i, m = p[1], p[2]
    local tok = tokens .. '.' .. (#out + 1)
    local job
    job, tok = take(qs[i], i, m, tok)
    if job == false then
      heldn = heldn + 1
    else
      local l = left[i]
      l[#l + 1] = m
      if job then
        register(qs[i])
        local ad = added[i]
        ad[#ad + 1] = until_
        ad[#ad + 1] = string.sub(m, -16)
        out[#out + 1] = {i, string.sub(m, -16), tok, job}
      end
    end
  end
  for i, q in ipairs(qs) do
    zrem(q.pending, left[i])
    local ad = added[i]
    for j = 1, #ad, 1000 do
      redis.call('ZADD', q.active, unpack(ad, j, math.min(j + 999, #ad)))
    end
  end
  if heldn == 0 or #out >= max or #c < want then
    break
  end
end
settle()
-- Promoted jobs this call could not take are ready for other workers.
if promoted > 0 then
  for _, q in ipairs(qs) do
    if not q.paused_now and redis.call('ZCARD', q.pending) > 0 then
      q.wake = true
    end
  end
end

-- idle_until is how long leasing these queues again would find nothing
-- unless a notification comes first ('' when one has ready jobs): until
-- the earliest due job, scheduler timer or end of a pause that holds
-- ready jobs back, or '0' when there is none. Work that becomes ready
-- sooner is published: on the queue's channel (add_pending) or on the
-- timers channel (timed in lib.lua). The heads promote and maintain read
-- still hold unless this script added timed work itself.
local function idle_until()
  local at = math.huge
  local function head(key)
    local r = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    if r[2] then
      at = math.min(at, tonumber(r[2]))
    end
  end
  for _, q in ipairs(qs) do
    if redis.call('ZCARD', q.pending) > 0 then
      if not q.paused_now then
        return ''
      end
      at = math.min(at, tonumber(redis.call('GET', q.paused)))
    end
    if q.next and not TIMED then
      at = math.min(at, q.next)
    else
      head(q.scheduled)
      head(q.retrying)
    end
  end
  if WAKE_NEXT and not TIMED then
    at = math.min(at, WAKE_NEXT)
  elseif P ~= '' then
    head(P .. 'sched:wake')
  end
  if at == math.huge then
    return '0'
  end
  return n2s(at)
end

local idle = ''
if #out < max then
  idle = idle_until()
end
return {snow, until_, out, wake(qs), idle}
