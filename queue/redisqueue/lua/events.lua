-- The event outbox's append step. It is prepended to every script, before
-- lib.lua, so that finish (in lib.lua), complete.lua and any later step
-- (a group's completion) append events in the same script as their
-- transition: an event exists exactly when its transition happened.
--
-- A script that may move a job to a final state ends ARGV with the
-- outbox's arguments, the same whatever its own arguments are:
--   nonce   16 hex digits, random per call: the end of the event ids
--   prefix  the outbox's key prefix ("sluice:outbox:")
--   'outbox'
-- or the single argument 'no-outbox' when the outbox is off. The closing
-- marker lets a script that was not sent them fail loudly at its first
-- event instead of reading its own arguments as the outbox's.
--
-- The outbox's keys are listed in the package doc (doc.go). An event
-- (event:<id>, a hash) holds: ty type, ca created (µs), j job id, q queue,
-- k kind, tn tenant, g group, st state, at attempt, er error, d data; tk
-- the claim token; p:<subscription> the delivery progress, '<attempts>' or
-- '<attempts>!' once final.

local OUTBOX = nil -- the outbox's arguments: false when off, read once

local function outbox_args()
  if OUTBOX == nil then
    local n = #ARGV
    if ARGV[n] == 'no-outbox' then
      OUTBOX = false
    elseif ARGV[n] == 'outbox' and n >= 3 then
      OUTBOX = {nonce = ARGV[n - 2], prefix = ARGV[n - 1]}
    else
      error('redisqueue: a script that ends jobs was run without the outbox arguments')
    end
  end
  return OUTBOX
end

-- id_part turns a queue name escaped as keyspace.Escape does into its
-- form in job ids (keyspace.Escape with '~' for '%', and '~' itself as
-- '~7E': only URL-unreserved characters), as keys.go's idQueue does.
local function id_part(escaped)
  if not string.find(escaped, '[%%~]') then
    return escaped
  end
  local s = string.gsub(string.gsub(escaped, '~', '~7E'), '%%', '~')
  return s
end

-- queue_tag returns the escaped name of the queue whose job keys start
-- with jp ('<prefix>queue:{<escaped name>}:job:') and the name itself:
-- scripts reach jobs of other queues than their own (a tenant's or
-- group's), so the queue comes from the job's key.
local function queue_tag(jp)
  local tag = string.match(jp, '{([^{}]*)}:job:$')
  local name = string.gsub(tag, '%%(%x%x)', function(h)
    return string.char(tonumber(h, 16))
  end)
  return tag, name
end

-- EV holds the helpers that append events, built by events() on first
-- use: a script with the outbox off never needs them, and Lua makes a
-- script's closures and tables on every run.
local EV

local function events()
  if EV then
    return EV
  end
  EV = {}
  -- The optional event fields append copies, in hash field names.
  EV.FIELDS = {'j', 'q', 'k', 'tn', 'g', 'st', 'at', 'er', 'd'}
  EV.JOB = {completed = 'job.completed', failed = 'job.failed', cancelled = 'job.cancelled'}

  -- Event numbers are taken from the store's counter in blocks, so that a
  -- script appending many events (a merged Complete) increments it once.
  -- Numbers a script leaves unused are skipped: ids need to be unique and
  -- ordered, not dense.
  EV.BLOCK = 64
  EV.next, EV.last = 1, 0

  function EV.number(prefix)
    if EV.next > EV.last then
      EV.last = redis.call('INCRBY', prefix .. 'seq', EV.BLOCK)
      EV.next = EV.last - EV.BLOCK + 1
    end
    local n = EV.next
    EV.next = n + 1
    return n
  end

  -- append records an event of type typ that happened at snow (µs, a
  -- string) when the outbox is on, and returns its id (nil when off).
  -- fields holds the event's optional fields by their hash names
  -- (strings; nil, false or '' for unset): j job id, q queue, k kind,
  -- tn tenant, g group, st state, at attempt, er error, d data (JSON). A
  -- group's completion calls it as
  --   events().append('group.completed', snow, {g = id, j = completion
  --     job id, q = its queue, d = final counts as JSON})
  -- The id is "evt_", the event's number (16 digits) and the call's
  -- nonce: unique within the store by the number and across stores by the
  -- nonce, and ids of one store sort in the order they were made, which is
  -- the order claims take events that are due at the same time.
  function EV.append(typ, snow, fields)
    local ob = outbox_args()
    if not ob then
      return nil
    end
    local id = 'evt_' .. string.format('%016.0f', EV.number(ob.prefix)) .. ob.nonce
    local h = {'ty', typ, 'ca', snow}
    for _, f in ipairs(EV.FIELDS) do
      local v = fields[f]
      if v and v ~= '' then
        h[#h + 1] = f
        h[#h + 1] = v
      end
    end
    redis.call('HSET', ob.prefix .. 'event:' .. id, unpack(h))
    redis.call('ZADD', ob.prefix .. 'due', snow, id)
    return id
  end

  -- ref returns the id suffix ("-" and the queue name in id form) and
  -- the queue name of the queue whose job keys start with jp.
  function EV.ref(jp)
    local tag, name = queue_tag(jp)
    return '-' .. id_part(tag), name
  end
  return EV
end

-- The event log (a stream; see the package doc) is written next to the
-- outbox, whether the outbox is on or not. Its arguments come just before
-- the outbox's: the stream's key, its approximate maximum length and the
-- marker 'log'; or the single marker 'no-log' when it is off.
local LOG = nil -- the log's arguments: false when off, read once

local function log_args()
  if LOG == nil then
    local n = #ARGV
    if outbox_args() then
      n = n - 3
    else
      n = n - 1
    end
    if ARGV[n] == 'no-log' then
      LOG = false
    elseif ARGV[n] == 'log' and n >= 3 then
      LOG = {key = ARGV[n - 2], max = ARGV[n - 1]}
    else
      error('redisqueue: a script that moves jobs was run without the event log arguments')
    end
  end
  return LOG
end

-- LOG_FIELDS are the optional fields of a logged event, as in the outbox.
local LOG_FIELDS = {'j', 'q', 'k', 'tn', 'g', 'st', 'at', 'er', 'd'}

-- log_event appends an event of type typ at snow (µs) to the event log
-- when it is on; fields as EV.append takes them.
local function log_event(typ, snow, fields)
  local L = log_args()
  if not L then
    return
  end
  local h = {'ty', typ, 'ca', snow}
  for _, f in ipairs(LOG_FIELDS) do
    local v = fields[f]
    if v and v ~= '' then
      h[#h + 1] = f
      h[#h + 1] = v
    end
  end
  redis.call('XADD', L.key, 'MAXLEN', '~', L.max, '*', unpack(h))
end

-- log_job logs event typ of job seq of queue table q, now in state st;
-- v holds the job's k kind, tn tenant, g group, at attempt and d data.
local function log_job(q, seq, typ, st, snow, v)
  if not log_args() then
    return
  end
  local E = events()
  if not q.ref then
    q.ref = {E.ref(q.jp)}
  end
  log_event(typ, snow, {j = seq .. q.ref[1], q = q.ref[2], k = v.k, tn = v.tn, g = v.g,
    st = st, at = v.at, d = v.d})
end

-- append_job_event records the event of job seq (hash jk) of queue table q
-- having just reached final state st. It copies the job's fields kind,
-- tenant, group, attempt and last error from job, {k, tn, g, at, le} as
-- the caller read them (after its write), or, when job is nil, from the
-- hash, so call it after the hash has its final fields.
local function append_job_event(q, jk, seq, st, snow, job)
  local ob = outbox_args()
  if not ob and not log_args() then
    return
  end
  local E = events()
  if not q.ref then
    q.ref = {E.ref(q.jp)}
  end
  local v = job or redis.call('HMGET', jk, 'k', 'tn', 'g', 'at', 'le')
  local er = v[5]
  if st == 'completed' then
    er = nil
  end
  local fields = {j = seq .. q.ref[1], q = q.ref[2], k = v[1], tn = v[2],
    g = v[3], st = st, at = v[4], er = er}
  log_event(E.JOB[st], snow, fields)
  if ob then
    E.append(E.JOB[st], snow, fields)
  end
end
