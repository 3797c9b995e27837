-- lean_lease: lease.lua for queues whose ready jobs need none of the
-- scheduler's work. It answers 'full' before any write when the run
-- would need more: due jobs to promote, a scheduler timer that is due, a
-- pause, or a candidate with a tenant or group; lease.go then runs
-- lease.lua. Otherwise it writes what lease.lua writes and replies as it
-- does. Self-contained, as lean_enqueue.lua.
-- KEYS: per queue: pending, scheduled, retrying, active, sched, paused.
-- ARGV: now ('' for Redis TIME), key prefix ('' on Cluster), the number
-- of queues, per queue its job key prefix, name and job id suffix; then
-- max, lease length (µs), worker id, token base, the event log's key (''
-- when off) and length, and the earliest timed work the caller knows of
-- (µs, '0' for none; '' to read the heads: heads.go).
-- The reply is lease.lua's, then the earliest timed work read ('' when
-- the caller gave it).
-- now and snow (µs, as a number and as text): lean_now.lua.
local P, nq = ARGV[2], tonumber(ARGV[3])
local a = 4 + 3 * nq
local max = tonumber(ARGV[a])
-- The earliest timed work: mostly nothing is due, and then it is what
-- the idle time needs (lease.lua's idle_until).
local at = math.huge
local known = ARGV[a + 6]
if known ~= '' then
  if known ~= '0' then
    at = tonumber(known)
    if at <= now then
      return 'full'
    end
  end
else
  local heads = {}
  for i = 1, nq do
    heads[#heads + 1] = KEYS[i * 6 - 4]
    heads[#heads + 1] = KEYS[i * 6 - 3]
  end
  if P ~= '' then
    heads[#heads + 1] = P .. 'sched:wake'
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
end
for i = 1, nq do
  local pu = redis.call('GET', KEYS[i * 6])
  if pu and tonumber(pu) > now then
    return 'full'
  end
end
-- Candidates: up to max of each queue, merged by band, then member
-- (rank, sequence), then queue (lease.lua's candidates).
local c, counts = {}, {}
for i = 1, nq do
  local r = redis.call('ZRANGE', KEYS[i * 6 - 5], 0, max - 1, 'WITHSCORES')
  counts[i] = #r / 2
  for j = 1, #r, 2 do
    c[#c + 1] = {i, r[j], tonumber(r[j + 1])}
  end
end
if nq > 1 then
  table.sort(c, function(x, y)
    if x[3] ~= y[3] then return x[3] < y[3] end
    if x[2] ~= y[2] then return x[2] < y[2] end
    return x[1] < y[1]
  end)
end
-- Read them all before writing anything: one with a tenant or group is
-- the full script's.
local take, left = {}, {}
for i = 1, nq do
  left[i] = {}
end
for _, p in ipairs(c) do
  if #take >= max then
    break
  end
  local i, m = p[1], p[2]
  local seq = string.sub(m, -16)
  local f = redis.call('HGETALL', ARGV[i * 3 + 1] .. seq)
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
  local l = left[i]
  l[#l + 1] = m
  if st == 'pending' then
    take[#take + 1] = {i, seq, f, atn, le, vs or vo, kind}
  end
end
local until_ = string.format('%d', now + tonumber(ARGV[a + 1]))
local worker, tokens, log = ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]
local out, added, v0, v = {}, {}, {}, {}
for n, t in ipairs(take) do
  local i, seq = t[1], t[2]
  local jk = ARGV[i * 3 + 1] .. seq
  local tok = tokens .. '.' .. n
  local at1 = string.format('%d', tonumber(t[4] or '0') + 1)
  redis.call('HSET', jk, 'st', 'active', 'at', at1, 'tk', tok, 'lu', until_, 'wk', worker, 'sa', snow, 'ua', snow)
  if log ~= '' then
    redis.call('XADD', log, 'MAXLEN', '~', ARGV[a + 5], '*', 'ty', 'job.started', 'ca', snow, 'j',
      seq .. ARGV[i * 3 + 3], 'q', ARGV[i * 3 + 2], 'k', t[7], 'st', 'active', 'at', at1)
  end
  if t[6] then
    if not v0[i] then
      v0[i] = tonumber(redis.call('HGET', KEYS[i * 6 - 1], 'v') or '0')
      v[i] = v0[i]
    end
    v[i] = math.max(v[i], tonumber(t[6]))
  end
  local errs = {}
  if t[5] then
    errs = redis.call('LRANGE', jk .. ':errors', 0, -1)
  end
  added[i] = added[i] or {}
  local ad = added[i]
  ad[#ad + 1] = until_
  ad[#ad + 1] = seq
  out[n] = {i, seq, tok, {t[3], errs}}
end
-- Every candidate read left its ready set, so a queue that gave fewer
-- than max and had all of them read is empty now.
local idle = ''
local empty = #out < max
for i = 1, nq do
  if #left[i] > 0 then
    redis.call('ZREM', KEYS[i * 6 - 5], unpack(left[i]))
  end
  if added[i] then
    redis.call('ZADD', KEYS[i * 6 - 2], unpack(added[i]))
    if P ~= '' then
      redis.call('SADD', P .. 'queues', ARGV[i * 3 + 2])
    end
  end
  if v0[i] and v[i] > v0[i] then
    redis.call('HSET', KEYS[i * 6 - 1], 'v', string.format('%d', v[i]))
  end
  if empty and not (counts[i] < max and #left[i] == counts[i]) and redis.call('ZCARD', KEYS[i * 6 - 5]) > 0 then
    empty = false
  end
end
local first = '0'
if at < math.huge then
  first = string.format('%d', at)
end
if empty then
  idle = first
end
if known ~= '' then
  first = ''
end
return {snow, until_, out, {}, idle, first}
