-- lean_complete: complete.lua for jobs that need none of the scheduler's
-- work (lean.go decides).
-- It answers 'full' before any write when a job it finds active under
-- its token has a tenant, a group or children; lease.go then runs
-- complete.lua. Self-contained, as lean_enqueue.lua.
-- KEYS: active, completed.
-- ARGV: now ('' for Redis TIME), job key prefix, the event log's key
-- ('' when off) and length, the queue's name and job id suffix, the
-- outbox's key prefix ('' when off) and this call's nonce (events.lua),
-- number of jobs, then per job: seq, token, result.
-- Returns one code per job as complete.lua does: 'ok', 'nf' or 'll'.
-- snow (µs as text): lean_now.lua.
local jp, log = ARGV[2], ARGV[3]
local ob, nonce = ARGV[7], ARGV[8]
local n = tonumber(ARGV[9])
local out, ok, seen = {}, {}, {}
for i = 0, n - 1 do
  local b = 10 + 3 * i
  local v = redis.call('HMGET', jp .. ARGV[b], 'st', 'tk', 'tn', 'g', 'ch', 'ukk', 'uf', 'k', 'at')
  if not v[1] then
    out[i + 1] = 'nf'
  elseif seen[ARGV[b]] then
    -- Completed earlier in this run (merged calls run in order).
    out[i + 1] = 'll'
  elseif v[1] ~= 'active' or v[2] ~= ARGV[b + 1] then
    out[i + 1] = 'll'
  elseif v[3] or v[4] or v[5] then
    return 'full'
  else
    out[i + 1] = 'ok'
    seen[ARGV[b]] = true
    ok[#ok + 1] = {b, v[6], v[7], v[8], v[9]}
  end
end
local done, scored = {}, {}
local evn, evlast
for _, o in ipairs(ok) do
  local b = o[1]
  local seq = ARGV[b]
  if ARGV[b + 2] ~= '' then
    redis.call('HSET', jp .. seq, 'st', 'completed', 'fa', snow, 'ua', snow, 'tk', '', 'lu', '', 'wk', '',
      'rs', ARGV[b + 2])
  else
    redis.call('HSET', jp .. seq, 'st', 'completed', 'fa', snow, 'ua', snow, 'tk', '', 'lu', '', 'wk', '')
  end
  -- A unique key held for a window outlives the job (lib.lua's
  -- release_unique).
  if o[2] and tonumber(o[3] or '0') == 0 and redis.call('GET', o[2]) == seq then
    redis.call('DEL', o[2])
  end
  if log ~= '' then
    redis.call('XADD', log, 'MAXLEN', '~', ARGV[4], '*', 'ty', 'job.completed', 'ca', snow, 'j', seq .. ARGV[6],
      'q', ARGV[5], 'k', o[4], 'st', 'completed', 'at', o[5])
  end
  if ob ~= '' then
    -- events.lua's EV.append: numbers taken in blocks of 64 per run.
    if not evn or evn > evlast then
      evlast = redis.call('INCRBY', ob .. 'seq', 64)
      evn = evlast - 63
    end
    local id = 'evt_' .. string.format('%016d', evn) .. nonce
    evn = evn + 1
    redis.call('HSET', ob .. 'event:' .. id, 'ty', 'job.completed', 'ca', snow, 'j', seq .. ARGV[6], 'q', ARGV[5],
      'k', o[4], 'st', 'completed', 'at', o[5])
    redis.call('ZADD', ob .. 'due', snow, id)
  end
  done[#done + 1] = seq
  scored[#scored + 1] = snow
  scored[#scored + 1] = seq
end
for j = 1, #done, 1000 do
  redis.call('ZREM', KEYS[1], unpack(done, j, math.min(j + 999, #done)))
end
for j = 1, #scored, 1000 do
  redis.call('ZADD', KEYS[2], unpack(scored, j, math.min(j + 999, #scored)))
end
return out
