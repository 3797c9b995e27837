-- lean_enqueue: enqueue.lua for jobs that need none of the scheduler's
-- work beyond the fair order and a unique key: no tenant or group
-- (lean.go decides). It writes what
-- enqueue.lua writes for such jobs, event log included, with
-- straight-line code: at ordinary rates a job's cost is the Lua a run
-- builds, not its Redis commands (docs/benchmarks.md). It makes no
-- closures but fair.lua's fair, which it carries as an EVALSHA script
-- and finds in the library's shared code as a function (scripts.go).
-- KEYS: pending, scheduled, jobs, seq, sched.
-- ARGV: now ('' for Redis TIME), key prefix ('' on Cluster), job key
-- prefix, channel, queue name, origin, '1' when the caller hears the
-- channel itself, the event log's key ('' when off) and length, the
-- queue's job id suffix, number of specs, then 11 per spec: kind,
-- payload, priority, run at, max attempts, timeout, webhook, trace,
-- unique key, its key name ('' for none), unique-for (µs).
-- Returns {now, per spec {0, seq, state}, woken} as enqueue.lua does.
-- now and snow (µs, as a number and as text): lean_now.lua.
local P, jp = ARGV[2], ARGV[3]
local n = tonumber(ARGV[11])
local log, logmax, idsuf = ARGV[8], ARGV[9], ARGV[10]
local last = tonumber(redis.call('GET', KEYS[4]) or '0')
-- The fair order (fair.lua, as sched.lua's tag applies it): jobs without
-- a tenant share the finish tag f: and have weight 1. fairtag_test.go
-- checks what this script stores against backend.FairTag and
-- backend.FairOrder.
local sv = redis.call('HMGET', KEYS[5], 'v', 'ag', 'f:')
local v, ag, f = tonumber(sv[1] or '0'), tonumber(sv[2] or '0'), tonumber(sv[3] or '0')
local out, jobs, pending, scheduled = {}, {}, {}, {}
for i = 0, n - 1 do
  local b = 12 + i * 11
  -- A unique key held by a job inside its window, or without a window by
  -- one not yet final, makes this a duplicate (enqueue.lua's held).
  local ukk, dup = ARGV[b + 9], nil
  if ukk ~= '' then
    dup = redis.call('GET', ukk)
    if dup then
      local d = redis.call('HMGET', jp .. dup, 'st', 'ca', 'uf')
      local uf = tonumber(d[3] or '0')
      if not d[1] or (uf > 0 and tonumber(d[2]) + uf <= now) or
          (uf == 0 and (d[1] == 'completed' or d[1] == 'failed' or d[1] == 'cancelled')) then
        dup = nil
      end
    end
  end
  if dup then
    out[i + 1] = {1, dup, {redis.call('HGETALL', jp .. dup), redis.call('LRANGE', jp .. dup .. ':errors', 0, -1)}}
  else
    local s = now
    if s <= last then
      s = last + 1
    end
    last = s
    local seq = string.format('%016d', s)
    local pr = ARGV[b + 2]
    local h = {'k', ARGV[b], 'pr', pr, 'ma', ARGV[b + 4], 'ca', snow, 'ua', snow}
    if ARGV[b + 1] ~= '' then h[#h + 1] = 'p'; h[#h + 1] = ARGV[b + 1] end
    if ARGV[b + 5] ~= '0' then h[#h + 1] = 'to'; h[#h + 1] = ARGV[b + 5] end
    if ARGV[b + 6] ~= '' then h[#h + 1] = 'wh'; h[#h + 1] = ARGV[b + 6] end
    if ARGV[b + 7] ~= '' then h[#h + 1] = 'tc'; h[#h + 1] = ARGV[b + 7] end
    if ukk ~= '' then
      h[#h + 1] = 'uk'; h[#h + 1] = ARGV[b + 8]
      h[#h + 1] = 'ukk'; h[#h + 1] = ukk
      if ARGV[b + 10] ~= '0' then h[#h + 1] = 'uf'; h[#h + 1] = ARGV[b + 10] end
    end
    local ra = tonumber(ARGV[b + 3])
    local st
    if ra > now then
      st = 'scheduled'
      local sra = string.format('%d', ra)
      h[#h + 1] = 'ra'; h[#h + 1] = sra
      scheduled[#scheduled + 1] = sra
      scheduled[#scheduled + 1] = seq
    else
      st = 'pending'
      local p = tonumber(pr)
      local start, band, rank
      start, f, band, rank = fair(v, f, 1, p, ag)
      local vo = string.format('%016d', rank)
      h[#h + 1] = 'ra'; h[#h + 1] = snow
      h[#h + 1] = 'vo'; h[#h + 1] = vo
      local vb = pr
      if band ~= p then
        vb = string.format('%d', band)
        h[#h + 1] = 'vb'; h[#h + 1] = vb
      end
      if rank ~= start then
        h[#h + 1] = 'vs'; h[#h + 1] = string.format('%d', start)
      end
      pending[#pending + 1] = vb
      pending[#pending + 1] = vo .. seq
    end
    h[#h + 1] = 'st'; h[#h + 1] = st
    redis.call('HSET', jp .. seq, unpack(h))
    if log ~= '' then
      redis.call('XADD', log, 'MAXLEN', '~', logmax, '*', 'ty', 'job.enqueued', 'ca', snow, 'j', seq .. idsuf,
        'q', ARGV[5], 'k', ARGV[b], 'st', st, 'at', '0')
    end
    if ukk ~= '' then
      local uf = tonumber(ARGV[b + 10])
      if uf > 0 then
        redis.call('SET', ukk, seq, 'PX', string.format('%d', math.ceil(uf / 1000)))
      else
        redis.call('SET', ukk, seq)
      end
    end
    jobs[#jobs + 1] = 0
    jobs[#jobs + 1] = seq
    out[i + 1] = {0, seq, st}
  end
end
redis.call('SET', KEYS[4], string.format('%d', last))
if P ~= '' then
  redis.call('SADD', P .. 'queues', ARGV[5])
end
local woken = {}
if #pending > 0 then
  if redis.call('ZCARD', KEYS[1]) == 0 then
    woken[1] = 1
    -- The enqueuing process wakes its own workers itself (notify.go): when
    -- it is the channel's one listener, nobody else needs the message. A
    -- server that will not say (a test double) gets it.
    local alone = false
    if ARGV[7] == '1' then
      local r = redis.pcall('PUBSUB', 'NUMSUB', ARGV[4])
      alone = type(r) == 'table' and tonumber(r[2]) == 1
    end
    if not alone then
      -- The message is the caller's origin, which it skips as its own.
      redis.call('PUBLISH', ARGV[4], ARGV[6])
    end
  end
  redis.call('HSET', KEYS[5], 'f:', string.format('%d', f))
end
for j = 1, #jobs, 1000 do
  redis.call('ZADD', KEYS[3], unpack(jobs, j, math.min(j + 999, #jobs)))
end
for j = 1, #pending, 1000 do
  redis.call('ZADD', KEYS[1], unpack(pending, j, math.min(j + 999, #pending)))
end
if #scheduled > 0 then
  for j = 1, #scheduled, 1000 do
    redis.call('ZADD', KEYS[2], unpack(scheduled, j, math.min(j + 999, #scheduled)))
  end
  -- Timed work a sleeping worker must hear of (lib.lua's timed).
  if P ~= '' then
    redis.call('PUBLISH', P .. 'sched:timers', 't')
  end
end
return {snow, out, woken}
