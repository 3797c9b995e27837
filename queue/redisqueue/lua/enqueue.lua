-- enqueue: store new jobs (one call's, or several calls' on one queue
-- merged into one run). Own arguments: 1 when a spec has a tenant or group
-- (else 0), the caller's origin (the message it knows for its own), per
-- queue '1' when the caller hears its channel itself (else '0'), the
-- number of specs, then 16 per spec: queue position, kind, payload, tenant, group, priority, run at,
-- max attempts, timeout, unique key, its key name, unique-for, webhook (JSON), trace context,
-- the tenant's key and the group's (keys.go's; '' for none or with the
-- scheduler off).
-- Returns {now, per spec {duplicate 0|1, seq, state | existing job}, woken}.

-- held returns the sequence of the job holding unique key ukk, if any: a
-- job inside its window, or, without a window, one not yet final.
local function held(q, ukk, now)
  local seq = redis.call('GET', ukk)
  if not seq then
    return nil
  end
  local v = redis.call('HMGET', q.jp .. seq, 'st', 'ca', 'uf')
  if not v[1] then
    return nil
  end
  local uf = tonumber(v[3] or '0')
  if uf > 0 then
    if tonumber(v[2]) + uf > now then
      return seq
    end
    return nil
  end
  if final(v[1]) then
    return nil
  end
  return seq
end

-- next_seq hands out the queue's next sequence: now in microseconds, or
-- one more than the last when the clock has not moved on (or went back).
-- So sequences are unique and increasing per queue and, across queues,
-- follow the time of enqueue.
local function next_seq(q, now)
  local last = q.last
  if not last then
    last = tonumber(redis.call('GET', q.seq) or '0')
  end
  local s = now
  if s <= last then
    s = last + 1
  end
  q.last = s
  return string.format('%016.0f', s)
end

-- Optional job fields: the hash field, the spec argument it comes from,
-- and true for a number, whose '0' is unset too (a text's '0' is text).
local OPTIONAL = {{'p', 2}, {'tn', 3}, {'g', 4}, {'to', 8, true}, {'uk', 9}, {'ukk', 10}, {'uf', 11, true},
  {'wh', 12}, {'tc', 13}}

-- join adds a new job to its group, creating a group never created (with
-- no limits).
local function join(J)
  if P == '' or not J.g then
    return
  end
  local X = scoped()
  if not X.group(J.g) then
    redis.call('HSET', X.gkey(J.g), 'ca', SNOW)
    X.forget_group(J.g)
  end
  redis.call('SADD', X.gkey(J.g) .. ':open', J.jk)
end

local function store(q, now, snow, b)
  local seq = next_seq(q, now)
  local pr = ARGV[b + 5]
  local ra = tonumber(ARGV[b + 6])
  local h = {'k', ARGV[b + 1], 'pr', pr, 'ma', ARGV[b + 7], 'ca', snow, 'ua', snow}
  for _, o in ipairs(OPTIONAL) do
    local v = ARGV[b + o[2]]
    if v ~= '' and not (o[3] and v == '0') then
      h[#h + 1] = o[1]
      h[#h + 1] = v
    end
  end
  local tn, g = ARGV[b + 3], ARGV[b + 4]
  local J = mkjob(q, seq, tn ~= '' and tn or nil, g ~= '' and g or nil, pr)
  local jk = J.jk
  if J.g then
    join(J)
  end
  -- Index writes are gathered and sent once per queue after the loop.
  local add = q.add
  add.jobs[#add.jobs + 1] = 0
  add.jobs[#add.jobs + 1] = seq
  local st
  if ra > now then
    st = 'scheduled'
    local sra = n2s(ra)
    local k = #h
    h[k + 1], h[k + 2], h[k + 3], h[k + 4] = 'ra', sra, 'st', st
    add.scheduled[#add.scheduled + 1] = sra
    add.scheduled[#add.scheduled + 1] = seq
    move(J, nil, st)
    timed()
  else
    local k = #h
    h[k + 1], h[k + 2] = 'ra', snow
    st = ready(J, nil, h)
  end
  redis.call('HSET', jk, unpack(h))
  log_job(q, seq, 'job.enqueued', st, snow, {k = ARGV[b + 1], tn = tn, g = g, at = '0'})
  local ukk = ARGV[b + 10]
  if ukk ~= '' then
    local uf = tonumber(ARGV[b + 11])
    if uf > 0 then
      redis.call('SET', ukk, seq, 'PX', n2s(math.ceil(uf / 1000)))
    else
      redis.call('SET', ukk, seq)
    end
  end
  return {0, seq, st}
end

-- refuse returns why the batch must store nothing, or nil: a job into a
-- group that is done or cancelled ({'gc', group}), or a tenant's backlog
-- (pending and waiting jobs) that the batch's ready jobs would pass
-- ({'bf', tenant, backlog, cap}). Duplicates store nothing and count for
-- nothing. It runs first whenever a spec has a tenant or group, so it
-- also gives the scheduler the keys of the specs' tenants and groups.
local function refuse(qs, now, a, n)
  local seen, adds = {}, {}
  for i = 0, n - 1 do
    local b = a + 4 + i * 16
    local q = qs[tonumber(ARGV[b])]
    local tn, g, ukk = ARGV[b + 3], ARGV[b + 4], ARGV[b + 10]
    if tn ~= '' or g ~= '' then
      scoped().known(tn, ARGV[b + 14], g, ARGV[b + 15])
    end
    local dup = false
    if ukk ~= '' and (tn ~= '' or g ~= '') then
      dup = seen[ukk] or held(q, ukk, now) ~= nil
    end
    if ukk ~= '' then
      seen[ukk] = true
    end
    if not dup and g ~= '' then
      local grp = scoped().group(g)
      if grp and (grp.cr or grp.da > 0) then
        return {'gc', g}
      end
    end
    if not dup and tn ~= '' and tonumber(ARGV[b + 6]) <= now then
      local no = backlog_take(adds, tn)
      if no then
        return no
      end
    end
  end
  return nil
end

local qs, a = queues()
local now, snow = now_us()
local n = tonumber(ARGV[a + 3])
local out = {}
if P ~= '' and ARGV[a] == '1' then
  local no = refuse(qs, now, a, n)
  if no then
    return no
  end
end
for _, q in ipairs(qs) do
  q.add = {jobs = {}, pending = {}, scheduled = {}}
end
for i = 0, n - 1 do
  local b = a + 4 + i * 16
  local q = qs[tonumber(ARGV[b])]
  local ukk = ARGV[b + 10]
  local dup = nil
  if ukk ~= '' then
    dup = held(q, ukk, now)
  end
  if dup then
    out[#out + 1] = {1, dup, read(q.jp .. dup, q.jp .. dup .. ':errors')}
  else
    out[#out + 1] = store(q, now, snow, b)
  end
end
for i, q in ipairs(qs) do
  if q.last then
    redis.call('SET', q.seq, n2s(q.last))
    register(q)
  end
  if #q.add.pending > 0 and redis.call('ZCARD', q.pending) == 0 then
    q.wake = true
    -- The message is the caller's origin: the enqueuing process wakes its
    -- own workers itself and skips it (notify.go); when it is the
    -- channel's one listener, no message is needed (see lean_enqueue.lua).
    q.note = ARGV[a + 1]
    if string.sub(ARGV[a + 2], i, i) == '1' then
      local r = redis.pcall('PUBSUB', 'NUMSUB', q.ch)
      q.quiet = type(r) == 'table' and tonumber(r[2]) == 1
    end
  end
  for _, set in ipairs({'jobs', 'pending', 'scheduled'}) do
    local l = q.add[set]
    for j = 1, #l, 1000 do
      redis.call('ZADD', q[set], unpack(l, j, math.min(j + 999, #l)))
    end
  end
end
for _, q in ipairs(qs) do
  q.add = nil
end
settle()
return {snow, out, wake(qs)}
