-- The tenant and group scheduler (queue.TenantBackend, queue.GroupBackend),
-- shared by every script after lib.lua.
--
-- Fair order. Each queue's sched hash holds its virtual time v, its aging
-- step ag, and the finish tag f:<tenant> of each tenant ('' for jobs
-- without one). A job that becomes ready for the first time gets its start
-- tag (queue.FairTag) and its order (queue.FairOrder), kept for life: vo
-- (rank, 16 digits), vb (band; only when not the priority) and vs (start
-- tag; only when not the rank). Ready and waiting sets score a job by
-- its band and name it by rank and sequence, so Redis orders equal bands
-- by member: (band, rank, sequence), every score a small integer.
--
-- Scopes. Under the key prefix P (ARGV[2]):
--   P..'sched:t:'..esc(tenant)   hash: own settings l w b mw (MaxWait, µs),
--                                 pause end pu, job counts n:<state>
--   P..'sched:g:'..esc(group)    hash: spec tn mc mi ttl ck cq cp, created ca,
--                                 cancel requested cr, done da, completion
--                                 job cj, last start ls, pause end pu, and
--                                 n:<state> for every state
--   <scope>:pending, :waiting    sorted sets of the scope's jobs in that
--                                 state: score band, member rank .. job key
--   <group>:open                 set of the group's unfinished job keys
--   P..'sched:defaults'          hash: the tenant defaults
--   P..'sched:wake'              sorted set of timed work, score = when:
--                                 't:'/'g:'..name fill a scope (a pause or
--                                 crawl delay ended), 'x:'..group its TTL,
--                                 'j:'..job key a MaxWait deadline
--   P..'sched:tw'                set of tenants with waiting jobs
--   P..'sched:done'              sorted set of done groups, score = done at
-- Counts and sets change only in move (scope_hook), called by every
-- transition of a job with a tenant or group, in the transition's script.
--
-- Cost. Every script runs this file's top level, so it defines only what
-- jobs without tenant or group need (the fair tag, ready, move, settle);
-- the scoped part is built by scoped() the first time a script needs it
-- (Lua makes a script's closures on every run, and that is not free).
-- These keys and the keys of other queues are derived inside the scripts
-- from job fields, so the scheduler needs a non-Cluster Redis: on a Cluster
-- client P is '' and only the fair order (in each queue's slot) applies.

local P = ARGV[2] or ''
local QUEUED = {pending = true, waiting = true}

local function num(v) return tonumber(v or '0') or 0 end

local function mkjob(q, seq, tn, g, pr, vo, vb)
  return {q = q, seq = seq, jk = q.jp .. seq, tn = tn or nil, g = g or nil,
    pr = pr or '0', vo = vo or nil, vb = vb or pr or '0'}
end

-- qmember is the job's member in its queue's index of state st.
local function qmember(J, st)
  if QUEUED[st] then
    return (J.vo or '') .. J.seq
  end
  return J.seq
end

-- pend adds a ready job to its queue's ready set, or to the gather list of
-- a script that writes the set once (enqueue).
local function pend(q, m, band)
  if q.add then
    local l = q.add.pending
    l[#l + 1] = band
    l[#l + 1] = m
  else
    add_pending(q, m, band)
  end
end

-- qsched returns a queue's fair-order state, read once per script.
local function qsched(q)
  if not q.sv then
    local v = redis.call('HMGET', q.sched, 'v', 'ag')
    q.sv = {v = num(v[1]), v0 = num(v[1]), ag = num(v[2]), f = {}, moved = {}}
  end
  return q.sv
end

-- flush_tags writes the finish tags and virtual times the script moved.
local function flush_tags()
  for _, q in pairs(QT) do
    local s = q.sv
    if s then
      local h = {}
      for tn in pairs(s.moved) do
        h[#h + 1] = 'f:' .. tn
        h[#h + 1] = n2s(s.f[tn])
      end
      if s.v > s.v0 then
        h[#h + 1] = 'v'
        h[#h + 1] = n2s(s.v)
        s.v0 = s.v
      end
      if #h > 0 then
        redis.call('HSET', q.sched, unpack(h))
      end
      s.moved = {}
    end
  end
end

-- S is the scoped part, built by scoped() on first use.
local S, scoped

-- tag gives a job ready for the first time its start tag and order, and
-- appends the fields to write to h.
local function tag(J, h)
  local s = qsched(J.q)
  local tn = J.tn or ''
  local f = s.f[tn]
  if not f then
    f = num(redis.call('HGET', J.q.sched, 'f:' .. tn))
  end
  local w = 1
  if J.tn and P ~= '' then
    w = math.min(math.max(scoped().tenant(J.tn).w, 1), 1000)
  end
  local start = math.max(s.v, f)
  s.f[tn] = start + math.floor(1000 / w)
  s.moved[tn] = true
  local pr = tonumber(J.pr)
  local band, rank = pr, start
  if s.ag > 0 then
    band = 0
    rank = start + pr * math.min(s.ag, 1000000) * 1000
  end
  J.vo = string.format('%016.0f', rank)
  -- vb and vs are stored only when they differ from the priority and the
  -- rank (with aging): most jobs write one field.
  local n = #h
  h[n + 1], h[n + 2] = 'vo', J.vo
  J.vb = J.pr
  if band ~= pr then
    J.vb = n2s(band)
    h[n + 3], h[n + 4] = 'vb', J.vb
  end
  if rank ~= start then
    n = #h
    h[n + 1], h[n + 2] = 'vs', n2s(start)
  end
end

-- ready is the one place that decides where a job that has become ready
-- goes (enqueue, due promotion, retry, snooze end, requeue, rescue,
-- completion job): it gets its fair tag the first time, leaves its state
-- from (nil for a new job), and goes pending, or waiting when its tenant
-- or group has no room (the scoped part's place). It appends the job's
-- new fields to h for the caller's write and returns the new state.
local function ready(J, from, h)
  if not J.vo then
    tag(J, h)
  end
  if P ~= '' and (J.tn or J.g) then
    return scoped().place(J, from, h)
  end
  pend(J.q, J.vo .. J.seq, J.vb)
  h[#h + 1] = 'st'
  h[#h + 1] = 'pending'
  return 'pending'
end

-- move is the tenant and group side of a job's move from state from to
-- state to (either nil: the job is new, or only leaves for now).
local function move(J, from, to)
  if P == '' or not (J.tn or J.g) then
    return
  end
  scoped().move(J, from, to)
end
scope_hook = move

-- settle does what the script's moves left behind: fills the scopes that
-- got room, completes the groups that may be done, and writes the fair
-- tags moved. Every script that moves jobs calls it last.
local function settle()
  if S then
    S.settle()
  end
  flush_tags()
end

-- maintain does the timed work that is due (at most 100 items per call):
-- fills scopes whose pause or crawl delay ended, cancels groups past their
-- TTL and fails jobs past their MaxWait.
local function maintain()
  if P == '' then
    return
  end
  local list = redis.call('ZRANGEBYSCORE', P .. 'sched:wake', '-inf', SNOW, 'LIMIT', 0, 100)
  if #list > 0 then
    redis.call('ZREM', P .. 'sched:wake', unpack(list))
    scoped().due(list)
  end
end

-- scoped builds the tenant and group part once per script.
scoped = function()
    if S then
      return S
    end
  local SP = P .. 'sched:'
  local WAKE, TW, DONE = SP .. 'wake', SP .. 'tw', SP .. 'done'
  local MAX_RELEASE, FILL_SCAN = 1000, 64
  local ADMITTED = {pending = true, active = true}
  local FILL_T, FILL_G, DONE_G = {}, {}, {}

  -- esc is keyspace.Escape: every byte outside A-Z a-z 0-9 - _ . ~ as %XX.
  local function esc(s)
    return (string.gsub(s, '[^%w%-_%.~]', function(c)
      return string.format('%%%02X', string.byte(c))
    end))
  end

  local function tkey(name) return SP .. 't:' .. esc(name) end
  local function gkey(id) return SP .. 'g:' .. esc(id) end

  -- qbase returns the queue table of the queue whose keys start with base
  -- ('<P>queue:{<name>}:'), the script's own when it has one.
  local function qbase(base)
    local jp = base .. 'job:'
    local q = QT[jp]
    if q then
      return q
    end
    q = {jp = jp, ch = base .. 'ready', wake = false}
    for _, n in ipairs(NAMES) do
      q[n] = base .. n
    end
    QT[jp] = q
    FOREIGN[#FOREIGN + 1] = q
    return q
  end

  -- The job key is the queue's base, 'job:' and the 16-digit sequence.
  local function qof(jk) return qbase(string.sub(jk, 1, #jk - 20)) end

  -- load reads a job of any queue by its key; nil when it is gone.
  local function load(jk)
    local v = redis.call('HMGET', jk, 'st', 'tn', 'g', 'pr', 'vo', 'vb', 'ukk', 'uf', 'at')
    if not v[1] then
      return nil
    end
    local J = mkjob(qof(jk), string.sub(jk, -16), v[2], v[3], v[4], v[5], v[6])
    J.st, J.ukk, J.uf, J.at = v[1], v[7], v[8], num(v[9])
    return J
  end

  local function wake_at(m, at)
    local cur = redis.call('ZSCORE', WAKE, m)
    if not cur or tonumber(cur) > at then
      redis.call('ZADD', WAKE, string.format('%.0f', at), m)
    end
  end

  -- Settings, read once per script.
  local DEF
  local TC, GC = {}, {}

  local function forget()
    DEF, TC, GC = nil, {}, {}
  end

  -- tenant returns a tenant's effective settings (queue.TenantConfig.Effective).
  local function tenant(name)
    local t = TC[name]
    if t then
      return t
    end
    if not DEF then
      local d = redis.call('HMGET', SP .. 'defaults', 'l', 'w', 'b', 'mw')
      DEF = {num(d[1]), num(d[2]), num(d[3]), num(d[4])}
    end
    local k = tkey(name)
    local o = redis.call('HMGET', k, 'l', 'w', 'b', 'mw', 'pu')
    local function pick(i, builtin)
      local v = num(o[i])
      if v ~= 0 then return v end
      if DEF[i] ~= 0 then return DEF[i] end
      return builtin
    end
    t = {k = k, name = name, l = pick(1, -1), w = pick(2, 1), mw = pick(4, 0), pu = num(o[5])}
    local backlog = 2000000
    if t.l > 0 then
      backlog = math.min(math.max(t.l * 2000, 50000), 2000000)
    end
    t.b = pick(3, backlog)
    TC[name] = t
    return t
  end

  -- group returns a group's settings, or nil when it does not exist.
  local function group(id)
    local g = GC[id]
    if g == nil then
      local k = gkey(id)
      local v = redis.call('HMGET', k, 'ca', 'mc', 'mi', 'ls', 'pu', 'cr', 'da')
      g = false
      if v[1] then
        g = {k = k, id = id, mc = num(v[2]), mi = num(v[3]), ls = num(v[4]), pu = num(v[5]),
          cr = v[6] == '1', da = num(v[7])}
      end
      GC[id] = g
    end
    return g or nil
  end

  -- blocked_until is when the group may start a job again: the end of a
  -- pause, or its last start plus its interval.
  local function blocked_until(g)
    local u = g.pu
    if g.mi > 0 and g.ls > 0 then
      u = math.max(u, g.ls + g.mi)
    end
    return u
  end

  local function counts(k, ...)
    local v = redis.call('HMGET', k, ...)
    for i = 1, #v do
      v[i] = num(v[i])
    end
    return v
  end

  -- leave and enter keep a scope's counts and sets: kind 't' or 'g', k the
  -- scope's key. A tenant counts only unfinished jobs.
  local function leave(kind, k, name, J, from)
    if kind == 't' and final(from) then
      return
    end
    local n = redis.call('HINCRBY', k, 'n:' .. from, -1)
    if QUEUED[from] then
      redis.call('ZREM', k .. ':' .. from, J.vo .. J.jk)
    end
    if from == 'waiting' and kind == 't' then
      redis.call('ZREM', WAKE, 'j:' .. J.jk)
      if n <= 0 then
        redis.call('SREM', TW, name)
      end
    end
  end

  local function enter(kind, k, name, J, to)
    if kind == 't' and final(to) then
      return
    end
    local n = redis.call('HINCRBY', k, 'n:' .. to, 1)
    if QUEUED[to] then
      redis.call('ZADD', k .. ':' .. to, J.vb, J.vo .. J.jk)
    end
    if to == 'waiting' and kind == 't' then
      if n == 1 then
        redis.call('SADD', TW, name)
      end
      local mw = tenant(name).mw
      if mw > 0 then
        redis.call('ZADD', WAKE, n2s(NOW + mw), 'j:' .. J.jk)
      end
    end
  end

  -- move is the scope side of a job's move from state from to state to
  -- (either nil: the job is new, or only leaves for now). A job leaving the
  -- admitted states (pending, active) leaves room: its scopes are filled
  -- before the script ends; a job reaching a final state may complete its
  -- group.
  local function move(J, from, to)
    if J.tn then
      local k = tkey(J.tn)
      if from then leave('t', k, J.tn, J, from) end
      if to then enter('t', k, J.tn, J, to) end
    end
    if J.g then
      local k = gkey(J.g)
      if from then leave('g', k, J.g, J, from) end
      if to then enter('g', k, J.g, J, to) end
      if to and final(to) then
        redis.call('SREM', k .. ':open', J.jk)
        DONE_G[J.g] = true
      end
    end
    if from and ADMITTED[from] and not (to and ADMITTED[to]) then
      if J.tn then FILL_T[J.tn] = true end
      if J.g then FILL_G[J.g] = true end
    end
  end

  -- tenant_room and group_room say whether the scope may admit one more
  -- pending job (the job asking does not count itself: it has left its
  -- state already).
  local function tenant_room(name)
    local t = tenant(name)
    if t.pu > NOW then
      wake_at('t:' .. name, t.pu)
      return false
    end
    if t.l < 0 then
      return true
    end
    local c = counts(t.k, 'n:pending', 'n:active')
    return c[1] + c[2] < t.l
  end

  local function group_room(id)
    local g = group(id)
    if not g then
      return true -- deleted after it was done: no limits left
    end
    local c = counts(g.k, 'n:pending', 'n:active')
    if g.mi > 0 and c[1] > 0 then
      return false -- the next start is taken; the start wakes the group
    end
    local u = blocked_until(g)
    if u > NOW then
      wake_at('g:' .. id, u)
      return false
    end
    return g.mc == 0 or c[1] + c[2] < g.mc
  end

  -- place is ready for a job with a tenant or group, after its tag: it
  -- leaves its state from, and goes pending, or waiting when its tenant or
  -- group has no room.
  local function place(J, from, h)
    move(J, from, nil)
    local st = 'pending'
    if (J.tn and not tenant_room(J.tn)) or (J.g and not group_room(J.g)) then
      st = 'waiting'
    end
    local m = J.vo .. J.seq
    if st == 'waiting' then
      redis.call('ZADD', J.q.waiting, J.vb, m)
    else
      pend(J.q, m, J.vb)
    end
    move(J, nil, st)
    h[#h + 1] = 'st'
    h[#h + 1] = st
    return st
  end

  -- hold moves a pending job to waiting (its scope has no room after all).
  local function hold(J)
    local m = J.vo .. J.seq
    redis.call('ZREM', J.q.pending, m)
    redis.call('ZADD', J.q.waiting, J.vb, m)
    redis.call('HSET', J.jk, 'st', 'waiting', 'ua', SNOW)
    move(J, 'pending', 'waiting')
  end

  -- unwait moves a waiting job to pending.
  local function unwait(J)
    local m = J.vo .. J.seq
    redis.call('ZREM', J.q.waiting, m)
    add_pending(J.q, m, J.vb)
    redis.call('HSET', J.jk, 'st', 'pending', 'ua', SNOW)
    move(J, 'waiting', 'pending')
  end

  -- release moves up to room of the scope's waiting jobs (key k), best
  -- first, to pending: those whose other scope has room (other). It reads
  -- just enough first and looks FILL_SCAN further only when it skipped some;
  -- stopping at MAX_RELEASE, it wakes the scope again (again).
  local function release(k, room, other, again)
    if room <= 0 then
      return
    end
    local limit = math.min(room, MAX_RELEASE)
    local released = 0
    for _, n in ipairs({limit, limit + FILL_SCAN}) do
      local list = redis.call('ZRANGE', k .. ':waiting', 0, n - 1)
      local skipped = false
      for _, m in ipairs(list) do
        if released == limit then
          break
        end
        local J = load(string.sub(m, 17))
        if J and J.st == 'waiting' and other(J) then
          unwait(J)
          released = released + 1
        else
          skipped = true
        end
      end
      if released == limit or not skipped or #list < n then
        break
      end
    end
    if released == MAX_RELEASE and room > MAX_RELEASE then
      again()
    end
  end

  local function fill_tenant(name)
    local t = tenant(name)
    local c = counts(t.k, 'n:waiting', 'n:pending', 'n:active')
    if c[1] <= 0 then
      return
    end
    if t.pu > NOW then
      wake_at('t:' .. name, t.pu)
      return
    end
    local room = c[1]
    if t.l >= 0 then
      room = math.min(room, t.l - c[2] - c[3])
    end
    release(t.k, room, function(J)
      return not J.g or group_room(J.g)
    end, function() wake_at('t:' .. name, NOW) end)
  end

  local function fill_group(id)
    local g = group(id)
    if not g then
      return
    end
    local c = counts(g.k, 'n:waiting', 'n:pending', 'n:active')
    if c[1] <= 0 then
      return
    end
    local u = blocked_until(g)
    if u > NOW then
      wake_at('g:' .. id, u)
      return
    end
    local room = c[1]
    if g.mc > 0 then
      room = math.min(room, g.mc - c[2] - c[3])
    end
    if g.mi > 0 then
      room = math.min(room, 1 - c[2])
    end
    release(g.k, room, function(J)
      return not J.tn or tenant_room(J.tn)
    end, function() wake_at('g:' .. id, NOW) end)
  end

  -- store_new stores a job in queue name (of any slot) that is ready now,
  -- as an enqueue without a backlog check would, and returns its id. A job
  -- holding the unique key uk and not finished is returned instead.
  local function store_new(name, kind, payload, tn, uk, ma)
    local base = P .. 'queue:{' .. esc(name) .. '}:'
    local q = qbase(base)
    local ukk = base .. 'unique:' .. esc(uk)
    local held = redis.call('GET', ukk)
    if held then
      local st = redis.call('HGET', q.jp .. held, 'st')
      if st and not final(st) then
        return held .. '-' .. esc(name)
      end
    end
    redis.call('SADD', P .. 'queues', name)
    local last = num(redis.call('GET', q.seq))
    local s = math.max(NOW, last + 1)
    redis.call('SET', q.seq, n2s(s))
    local seq = string.format('%016.0f', s)
    local J = mkjob(q, seq, tn ~= '' and tn or nil, nil, '0')
    local h = {'k', kind, 'p', payload, 'pr', '0', 'ra', SNOW, 'ma', ma, 'uk', uk, 'ukk', ukk,
      'ca', SNOW, 'ua', SNOW}
    if J.tn then
      h[#h + 1] = 'tn'
      h[#h + 1] = tn
    end
    redis.call('ZADD', q.jobs, 0, seq)
    redis.call('SET', ukk, seq)
    ready(J, nil, h)
    redis.call('HSET', J.jk, unpack(h))
    return seq .. '-' .. esc(name)
  end

  local GROUP_COUNTS = {'n:scheduled', 'n:pending', 'n:waiting', 'n:active', 'n:retrying',
    'n:completed', 'n:failed', 'n:cancelled'}

  -- complete_group marks group id done when it has jobs and none unfinished,
  -- and enqueues its completion job. The done mark is written only if it was
  -- not set (HSETNX), so the completion job is enqueued exactly once.
  local function complete_group(id)
    local g = group(id)
    if not g or g.da > 0 then
      return
    end
    local c = counts(g.k, unpack(GROUP_COUNTS))
    local unfinished = c[1] + c[2] + c[3] + c[4] + c[5]
    if unfinished > 0 or unfinished + c[6] + c[7] + c[8] == 0 then
      return
    end
    if redis.call('HSETNX', g.k, 'da', SNOW) == 0 then
      return
    end
    g.da = NOW
    redis.call('ZADD', DONE, SNOW, id)
    redis.call('ZREM', WAKE, 'x:' .. id, 'g:' .. id)
    local s = redis.call('HMGET', g.k, 'ck', 'cq', 'cp', 'tn', 'cr')
    if not s[1] then
      return
    end
    local payload = s[3]
    if not payload or payload == '' then
      payload = '{"group":' .. cjson.encode(id) .. ',"total":' .. n2s(unfinished + c[6] + c[7] + c[8]) ..
        ',"completed":' .. n2s(c[6]) .. ',"failed":' .. n2s(c[7]) .. ',"cancelled":' .. n2s(c[8])
      if s[5] == '1' then
        payload = payload .. ',"cancel_requested":true'
      end
      payload = payload .. '}'
    end
    local cq = s[2]
    if not cq or cq == '' then
      cq = 'default'
    end
    local jid = store_new(cq, s[1], payload, s[4] or '', 'group:' .. id, '__MAX_ATTEMPTS__')
    redis.call('HSET', g.k, 'cj', jid)
  end

  -- cancel_group marks group id cancel-requested, cancels its jobs that have
  -- not started and flags its active ones, then completes it if it can.
  local function cancel_group(id)
    local g = group(id)
    if not g or g.cr or g.da > 0 then
      return
    end
    g.cr = true
    redis.call('HSET', g.k, 'cr', '1')
    redis.call('ZREM', WAKE, 'x:' .. id, 'g:' .. id)
    for _, jk in ipairs(redis.call('SMEMBERS', g.k .. ':open')) do
      local J = load(jk)
      if not J then
        redis.call('SREM', g.k .. ':open', jk)
      elseif J.st == 'active' then
        redis.call('HSET', jk, 'cr', '1', 'ua', SNOW)
      elseif not final(J.st) then
        redis.call('ZREM', J.q[J.st], qmember(J, J.st))
        finish(J.q, jk, J.seq, 'cancelled', SNOW, J.ukk, J.uf, nil, J, J.st)
      end
    end
    DONE_G[id] = true
  end

  -- expire_wait fails a job that waited longer than its tenant's MaxWait.
  local function expire_wait(jk)
    local J = load(jk)
    if not J or J.st ~= 'waiting' then
      return
    end
    local msg = string.format("queue: tenant backlog full: waited longer than tenant %s's MaxWait of %gs",
      J.tn or '', tenant(J.tn or '').mw / 1e6)
    record_error(jk .. ':errors', J.at, SNOW, msg)
    redis.call('ZREM', J.q.waiting, qmember(J, 'waiting'))
    finish(J.q, jk, J.seq, 'failed', SNOW, J.ukk, J.uf, {'le', msg}, J, 'waiting')
  end

  -- settle fills the scopes that got room and completes the groups that
  -- may be done.
  local function settle()
    for _ = 1, 100 do
      local ts, gs, ds = {}, {}, {}
      for n in pairs(FILL_T) do ts[#ts + 1] = n end
      for n in pairs(FILL_G) do gs[#gs + 1] = n end
      for n in pairs(DONE_G) do ds[#ds + 1] = n end
      if #ts + #gs + #ds == 0 then
        break
      end
      FILL_T, FILL_G, DONE_G = {}, {}, {}
      for _, n in ipairs(ts) do fill_tenant(n) end
      for _, n in ipairs(gs) do fill_group(n) end
      for _, n in ipairs(ds) do complete_group(n) end
    end
  end

  -- due does the timed work listed in due (members of the wake set).
  local function due(list)
    for _, m in ipairs(list) do
      local kind, name = string.sub(m, 1, 1), string.sub(m, 3)
      if kind == 't' then
        fill_tenant(name)
      elseif kind == 'g' then
        fill_group(name)
      elseif kind == 'x' then
        cancel_group(name)
      elseif kind == 'j' then
        expire_wait(name)
      end
    end
  end
  S = {WAKE = WAKE, TW = TW, DONE = DONE,
    esc = esc,
    tkey = tkey,
    gkey = gkey,
    qbase = qbase,
    qof = qof,
    load = load,
    wake_at = wake_at,
    forget = forget,
    tenant = tenant,
    group = group,
    blocked_until = blocked_until,
    counts = counts,
    move = move,
    tenant_room = tenant_room,
    group_room = group_room,
    place = place,
    hold = hold,
    unwait = unwait,
    fill_tenant = fill_tenant,
    fill_group = fill_group,
    complete_group = complete_group,
    cancel_group = cancel_group,
    expire_wait = expire_wait,
    settle = settle,
    due = due,
    forget_group = function(id) GC[id] = nil end}
  return S
end
