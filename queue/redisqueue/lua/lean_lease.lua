-- lean_lease: lease.lua for one queue whose ready jobs need none of the
-- scheduler's work. It answers 'full' before any write when the run
-- would need more: due jobs to promote, a scheduler timer that is due, a
-- pause, or a candidate with a tenant or group; lease.go then runs
-- lease.lua. Otherwise it writes what lease.lua writes and replies as it
-- does. Self-contained, as lean_enqueue.lua.
-- KEYS: pending, scheduled, retrying, active, sched, paused.
-- ARGV: now ('' for Redis TIME), key prefix ('' on Cluster), job key
-- prefix, queue name, max, lease length (µs), worker id, token base, the
-- event log's key ('' when off) and length, the queue's job id suffix.
local now, snow
if ARGV[1] ~= '' then
  now, snow = tonumber(ARGV[1]), ARGV[1]
else
  local t = redis.call('TIME')
  snow = t[1] .. string.rep('0', 6 - #t[2]) .. t[2]
  now = tonumber(snow)
end
local P, jp = ARGV[2], ARGV[3]
local max = tonumber(ARGV[5])
-- The earliest timed work: mostly nothing is due, and then it is what
-- the idle time needs (lease.lua's idle_until).
local at = math.huge
local heads = {KEYS[2], KEYS[3]}
if P ~= '' then
  heads[3] = P .. 'sched:wake'
end
for _, key in ipairs(heads) do
  local h = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if h[2] then
    local t = tonumber(h[2])
    if t <= now then
      return 'full'
    end
    if t < at then
      at = t
    end
  end
end
local pu = redis.call('GET', KEYS[6])
if pu and tonumber(pu) > now then
  return 'full'
end
local c = redis.call('ZRANGE', KEYS[1], 0, max - 1)
local take, left = {}, {}
for i = 1, #c do
  local m = c[i]
  local seq = string.sub(m, -16)
  local f = redis.call('HGETALL', jp .. seq)
  local st, atn, le, vo, vs, kind
  for k = 1, #f, 2 do
    local name = f[k]
    if name == 'st' then st = f[k + 1]
    elseif name == 'k' then kind = f[k + 1]
    elseif name == 'at' then atn = f[k + 1]
    elseif name == 'le' then le = true
    elseif name == 'vo' then vo = f[k + 1]
    elseif name == 'vs' then vs = f[k + 1]
    elseif name == 'tn' or name == 'g' then return 'full'
    end
  end
  left[#left + 1] = m
  if st == 'pending' then
    take[#take + 1] = {seq, f, atn, le, vs or vo, kind}
  end
end
local until_ = string.format('%.0f', now + tonumber(ARGV[6]))
local worker, tokens, log = ARGV[7], ARGV[8], ARGV[9]
local out, added = {}, {}
local v0 = nil
local v = 0
for i, t in ipairs(take) do
  local seq = t[1]
  local jk = jp .. seq
  local tok = tokens .. '.' .. i
  local at1 = string.format('%.0f', tonumber(t[3] or '0') + 1)
  redis.call('HSET', jk, 'st', 'active', 'at', at1, 'tk', tok, 'lu', until_, 'wk', worker, 'sa', snow, 'ua', snow)
  if log ~= '' then
    redis.call('XADD', log, 'MAXLEN', '~', ARGV[10], '*', 'ty', 'job.started', 'ca', snow, 'j', seq .. ARGV[11],
      'q', ARGV[4], 'k', t[6], 'st', 'active', 'at', at1)
  end
  if t[5] then
    if not v0 then
      v0 = tonumber(redis.call('HGET', KEYS[5], 'v') or '0')
      v = v0
    end
    v = math.max(v, tonumber(t[5]))
  end
  local errs = {}
  if t[4] then
    errs = redis.call('LRANGE', jk .. ':errors', 0, -1)
  end
  added[#added + 1] = until_
  added[#added + 1] = seq
  out[i] = {1, seq, tok, {t[2], errs}}
end
if #left > 0 then
  redis.call('ZREM', KEYS[1], unpack(left))
end
if #added > 0 then
  redis.call('ZADD', KEYS[4], unpack(added))
  if P ~= '' then
    redis.call('SADD', P .. 'queues', ARGV[4])
  end
end
if v0 and v > v0 then
  redis.call('HSET', KEYS[5], 'v', string.format('%.0f', v))
end
-- Every candidate read left the ready set, so fewer than max of them
-- means it is empty now.
local idle = ''
if #c < max or (#out < max and redis.call('ZCARD', KEYS[1]) == 0) then
  idle = '0'
  if at < math.huge then
    idle = string.format('%.0f', at)
  end
end
return {snow, until_, out, {}, idle}
