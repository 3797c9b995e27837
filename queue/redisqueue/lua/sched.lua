-- The tenant and group scheduler (queue.TenantBackend, queue.GroupBackend),
-- shared by every script after lib.lua.
--
-- Fair order. Each queue's sched hash holds its virtual time v, its aging
-- step ag, and the finish tag f:<tenant> of each tenant ('' for jobs
-- without one). A job that becomes ready for the first time gets its start
-- tag (backend.FairTag) and its order (backend.FairOrder), kept for life: vo
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
--                                 job cj and its key cjk, its end ea once
--                                 that job is deleted, last start ls,
--                                 pause end pu, and n:<state> for every
--                                 state
--   <scope>:pending, :waiting    sorted sets of the scope's jobs in that
--                                 state: score band, member rank .. job key
--   <group>:open                 set of the group's unfinished job keys
--   P..'sched:defaults'          hash: the tenant defaults
--   P..'sched:wake'              sorted set of timed work, score = when:
--                                 't:'/'g:'..name fill a scope (a pause or
--                                 crawl delay ended), 'x:'..group its TTL,
--                                 'j:'..job key a MaxWait deadline
--   P..'sched:tw'                set of tenants with waiting jobs
--   P..'sched:tenants'           sorted set, every score 0: the tenants with
--                                 unfinished jobs or own settings (the
--                                 tenant list), kept by enter, settle,
--                                 settenant.lua and pause.lua
--   P..'sched:done'              sorted set of done groups, score = done at
--                                 (moved later by cleangroups.lua until
--                                 the group has ended)
-- Counts and sets change only in move (scope_hook), called by every
-- transition of a job with a tenant or group, in the transition's script.
-- These keys and the keys of other queues are derived inside the scripts
-- from job fields, so the scheduler needs a non-Cluster Redis: on a Cluster
-- client P is '' and only the fair order (in each queue's slot) applies.
--
-- Where things happen: ready (below) is the one function that decides
-- pending or waiting; a group completes in scope.lua's complete_group,
-- run by settle at the end of the script whose transition finished the
-- group's last job (finish and complete.lua mark the group through move).
--
-- Cost. Every script runs this file's top level, so it defines only what
-- jobs without tenant or group need (the fair tag, ready, move, settle);
-- the scoped part is in scope.lua, built by scoped() the first time a
-- script needs it (Lua makes a script's closures on every run, and that is
-- not free).

local P = ARGV[2] or ''
local QUEUED = {pending = true, waiting = true}

-- register adds queue table q's name to the registry of queues,
-- P..'queues', that calls on every queue read (Stats, RescueExpired,
-- Cleanup). Every script that can give a queue a job it did not have
-- (enqueue, lease, retry, a group's completion job) calls it in the same
-- step, so the registry heals itself when Redis lost it. SADD of a member
-- already there changes nothing and is not replicated. On a Cluster
-- client (P '') the registry is in another slot: enqueue.go's register
-- adds the names instead.
local function register(q)
  if P == '' or q.registered then
    return
  end
  q.registered = true
  local _, name = queue_tag(q.jp)
  redis.call('SADD', P .. 'queues', name)
end

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

-- qsched returns a queue's fair-order state, read once per script. The
-- finish tag of jobs without a tenant comes in the same read: they are
-- most jobs, and a second read per script costs as much as this one.
local function qsched(q)
  if not q.sv then
    local v = redis.call('HMGET', q.sched, 'v', 'ag', 'f:')
    q.sv = {v = num(v[1]), v0 = num(v[1]), ag = num(v[2]), f = {[''] = num(v[3])}, moved = {}}
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

-- backlog_take counts one more ready job of tenant tn against its backlog
-- cap, adds holding what the call counted so far per tenant; it returns
-- the refusal {'bf', tenant, backlog, cap} when the cap is reached, else
-- nil. Tenants without a cap count nothing.
local function backlog_take(adds, tn)
  local t = scoped().tenant(tn)
  if t.b < 0 then
    return nil
  end
  local c = adds[tn]
  if not c then
    local v = S.counts(t.k, 'n:pending', 'n:waiting')
    c = v[1] + v[2]
  end
  if c >= t.b then
    return {'bf', tn, c, t.b}
  end
  adds[tn] = c + 1
  return nil
end

-- tag gives a job ready for the first time its start tag and order (the
-- rule is fair.lua's), and appends the fields to write to h.
-- fairtag_test.go checks it against backend.FairTag and backend.FairOrder.
local function tag(J, h)
  local s = qsched(J.q)
  local tn = J.tn or ''
  local f = s.f[tn]
  if not f then
    f = num(redis.call('HGET', J.q.sched, 'f:' .. tn))
  end
  local w = 1
  if J.tn and P ~= '' then
    w = scoped().tenant(J.tn).w
  end
  local pr = tonumber(J.pr)
  local start, fin, band, rank = fair(s.v, f, w, pr, s.ag)
  s.f[tn] = fin
  s.moved[tn] = true
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
-- It looks at the head first: mostly nothing is due, and then the head's
-- time is what the lease's idle_until needs (WAKE_NEXT; nil when unknown).
local WAKE_NEXT
local function maintain()
  WAKE_NEXT = nil
  if P == '' then
    return
  end
  local h = redis.call('ZRANGE', P .. 'sched:wake', 0, 0, 'WITHSCORES')
  if not h[2] then
    WAKE_NEXT = math.huge
    return
  end
  if tonumber(h[2]) > NOW then
    WAKE_NEXT = tonumber(h[2])
    return
  end
  local list = redis.call('ZRANGEBYSCORE', P .. 'sched:wake', '-inf', SNOW, 'LIMIT', 0, 100)
  if #list > 0 then
    redis.call('ZREM', P .. 'sched:wake', unpack(list))
    scoped().due(list)
  end
end
