-- Shared by every script: it is prepended to each one (after events.lua,
-- the outbox's append step).
--
-- Conventions:
--   * KEYS holds one group of NK keys per queue (see queueKeyNames in
--     keys.go); a per-job script appends the job hash and its error list.
--   * ARGV[1] is now in Unix microseconds, or '' to read Redis TIME.
--     ARGV[2] is the key prefix, or '' when the tenant and group scheduler
--     is off (Redis Cluster; see sched.lua). ARGV[3] is the number of
--     queues; then, per queue, its job key prefix and its notification
--     channel. A script's own arguments follow.
--   * A job hash holds only the fields that are set (missing = zero):
--       k kind, p payload, tn tenant, g group, pr priority, ra run at,
--       ma max attempts, to timeout (ns), uk unique key, ukk the key that
--       holds it, uf unique-for (µs), st state, at attempt, sl stalls,
--       le last error, rs result, cr cancel requested, tk token,
--       lu lease until, wk worker, ca created, ua updated, sa started,
--       fa finished, vs fair start tag, vb band and vo rank (16 digits) of
--       the fair order (see sched.lua). Times are Unix microseconds. An empty value is unset
--       too (a cleared lease).
--       Also wh the job's own webhook (queue.Webhook as JSON) and tc the
--       trace context of the call that enqueued it.
--   * Numbers go to Redis through n2s: a Lua number would be written in
--     exponent form by some runtimes; integers below 2^53 are exact.
--   * Every move between states goes through add_pending, leave_active and
--     finish (or writes next to them): that is where later layers (a
--     tenant's slots, a group's counters, an event outbox) hook in, so
--     they change in the same script as the job. The tenant and group
--     side is sched.lua's move (scope_hook here); sched.lua's ready decides
--     where a job that becomes ready goes.
--   * Keys of tenants, groups and other queues are derived from job
--     fields inside the scripts (see sched.lua), which needs a non-Cluster
--     Redis; with ARGV[2] empty (Cluster) no such key is touched.

local NK = 12
local MAX_HISTORY = __MAX_HISTORY__
local NAMES = {'pending', 'scheduled', 'retrying', 'active', 'completed',
  'failed', 'cancelled', 'waiting', 'jobs', 'seq', 'sched', 'paused'}

-- NOW and SNOW are the script's time, set by now_us; QT holds every queue
-- table of the script by job key prefix, FOREIGN those the scheduler
-- reached through a job of another queue (see sched.lua).
local NOW, SNOW
local QT, FOREIGN = {}, {}
-- scope_hook is set by sched.lua: the tenant and group side of a move.
local scope_hook
-- flow_hook is set by flowlib.lua: a job with children ended (see there).
local flow_hook

local function n2s(n)
  return string.format('%.0f', n)
end

-- esc escapes a name into a key segment as keyspace.Escape does: every
-- byte outside A-Z a-z 0-9 - _ . ~ becomes %XX. It is the scripts' one
-- escape, kept for the names a script finds only while it runs (a released
-- job's tenant, a group's completion queue, a delivery's subscription read
-- from its entry), which live data stores unescaped; a name known when a
-- script is called arrives in a key Go built (keys.go). fairtag_test.go
-- checks it against keyspace.Escape. Most names need no escaping, and a
-- find is cheaper than a gsub.
local function esc(s)
  if not string.find(s, '[^A-Za-z0-9%-_%.~]') then
    return s
  end
  return (string.gsub(s, '[^A-Za-z0-9%-_%.~]', function(c)
    return string.format('%%%02X', string.byte(c))
  end))
end

-- now_us returns now as a number and as a string (formatting numbers
-- costs more than it seems, so the string is built once).
local function now_us()
  if ARGV[1] ~= '' then
    NOW, SNOW = tonumber(ARGV[1]), ARGV[1]
    return NOW, SNOW
  end
  local t = redis.call('TIME')
  local s = t[1] .. string.rep('0', 6 - #t[2]) .. t[2]
  NOW, SNOW = tonumber(s), s
  return NOW, SNOW
end

-- queues reads the queue groups; it returns them and the index of the
-- script's first own argument.
local function queues()
  local n = tonumber(ARGV[3])
  local qs = {}
  for i = 0, n - 1 do
    local q = {jp = ARGV[4 + 2 * i], ch = ARGV[5 + 2 * i], wake = false}
    for j = 1, NK do
      q[NAMES[j]] = KEYS[i * NK + j]
    end
    -- Blocked jobs (flowlib.lua) are indexed in the queue's slot too.
    q.blocked = string.sub(q.jp, 1, -5) .. 'blocked'
    qs[i + 1] = q
    QT[q.jp] = q
  end
  return qs, 4 + 2 * n
end

local function final(st)
  return st == 'completed' or st == 'failed' or st == 'cancelled'
end

-- add_pending adds a job to the ready set with its fair order: score the
-- band, member the rank and sequence (see sched.lua). A queue whose ready
-- set was empty before the script's first addition is marked to wake its
-- workers: while it is not empty, they are busy or about to lease anyway.
local function add_pending(q, member, band)
  if not q.checked then
    q.checked = true
    if redis.call('ZCARD', q.pending) == 0 then
      q.wake = true
    end
  end
  redis.call('ZADD', q.pending, band, member)
end

-- timed says the script added timed work: a job due later, or a
-- scheduler timer (sched.lua's wake set). A worker that found its queues
-- empty skips leasing until the earliest timed work it was told of (see
-- lease.lua's idle_until) or until a notification, so new timed work
-- that may come sooner is published, once per script, on the prefix's
-- timers channel. Off Cluster only (ARGV[2] is the prefix there), the
-- one place workers skip leases.
local TIMED = false
local function timed()
  if TIMED or ARGV[2] == '' then
    return
  end
  TIMED = true
  redis.call('PUBLISH', ARGV[2] .. 'sched:timers', 't')
end

-- wake publishes on the channel of every marked queue and returns their
-- positions (1-based), so the caller can wake its own process at once.
-- The message is '1', or the origin an enqueue left in q.note; none when
-- an enqueue found its caller the channel's one listener (q.quiet).
local function wake(qs)
  local out = {}
  for i, q in ipairs(qs) do
    if q.wake then
      if not q.quiet then
        redis.call('PUBLISH', q.ch, q.note or '1')
      end
      out[#out + 1] = i
    end
  end
  for _, q in ipairs(FOREIGN) do
    if q.wake then
      redis.call('PUBLISH', q.ch, '1')
      q.wake = false
    end
  end
  return out
end

-- with appends the field/value pairs of more to h and returns h.
local function with(h, more)
  for _, v in ipairs(more or {}) do
    h[#h + 1] = v
  end
  return h
end

-- release_unique frees unique key ukk (may be false) if job seq still
-- holds it. With only_final, a key held for a time window (uf > 0) is kept:
-- the window outlives the job's end. Without, every key goes (the job is
-- being deleted).
local function release_unique(ukk, uf, seq, only_final)
  if not ukk then
    return
  end
  if only_final and tonumber(uf or '0') > 0 then
    return
  end
  if redis.call('GET', ukk) == seq then
    redis.call('DEL', ukk)
  end
end

-- finish moves a job to a final state at now (snow, a string), with more fields to set in
-- the same write. ukk and uf are the job's unique key fields. The caller
-- has taken the job out of its previous index (and its lease). J, the job
-- as the scheduler sees it (nil for a job without tenant or group), and
-- from, its state before, move its tenant's and group's counts in the
-- same step; a group left with no unfinished job completes there.
local function finish(q, jk, seq, st, snow, ukk, uf, more, J, from)
  redis.call('HSET', jk, unpack(with({'st', st, 'fa', snow, 'ua', snow}, more)))
  redis.call('ZADD', q[st], snow, seq)
  release_unique(ukk, uf, seq, true)
  append_job_event(q, jk, seq, st, snow)
  if J then
    scope_hook(J, from, st)
  end
  if flow_hook and redis.call('HEXISTS', jk, 'ch') == 1 then
    flow_hook(jk, st)
  end
end

-- leave_active takes a job out of the active index and returns the
-- fields that clear its lease, for the caller's next write to the job
-- (an empty lease field means none: one write instead of HDEL and HSET).
local function leave_active(q, seq)
  redis.call('ZREM', q.active, seq)
  return {'tk', '', 'lu', '', 'wk', ''}
end

-- fence checks that the job exists, is active and held by token, reading
-- the extra fields in the same call. It returns an error code ('nf',
-- 'll') or nil, and the extra fields' values (false when unset).
local function fence(jk, token, ...)
  local v = redis.call('HMGET', jk, 'st', 'tk', ...)
  if not v[1] then
    return 'nf'
  end
  if v[1] ~= 'active' or v[2] ~= token then
    return 'll'
  end
  return nil, {unpack(v, 3)}
end

-- record_error appends an attempt's error to the history, keeping the
-- newest MAX_HISTORY. The caller sets le (the last error) in its write.
local function record_error(ek, attempt, snow, msg)
  redis.call('RPUSH', ek, tostring(attempt) .. '|' .. snow .. '|' .. msg)
  redis.call('LTRIM', ek, -MAX_HISTORY, -1)
end

-- read returns a job as {fields, errors}.
local function read(jk, ek)
  return {redis.call('HGETALL', jk), redis.call('LRANGE', ek, 0, -1)}
end

-- zrem removes members from a sorted set in chunks (unpack has a limit).
local function zrem(key, members)
  for i = 1, #members, 1000 do
    redis.call('ZREM', key, unpack(members, i, math.min(i + 999, #members)))
  end
end

