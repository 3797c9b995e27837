-- flow_enqueue: store jobs that depend on others: a flow's nodes, or an
-- enqueue whose specs have DependsOn. KEYS: queue groups. Own arguments:
-- the flow id ('' for none), the flow's key ('' for none), its name, the
-- number of nodes, then 21 per node: the 16 of an enqueue's spec (see
-- enqueue.lua), node name, on parent failure, the positions of
-- its parents among the nodes before it (0-based, comma-separated), the
-- job keys of its other parents ('\0'-separated), their ids
-- (comma-separated).
-- Returns {now, per node {seq, state, last error}, woken}, or why nothing
-- was stored:
-- {'nf', node, parent id}, {'dup', node, holder seq}, {'gc', group},
-- {'bf', tenant, backlog, cap}.

local NF = 21
local qs, a = queues()
local now, snow = now_us()
local fid, fkey, fname, n = ARGV[a], ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3])
local F = flows()

local function arg(i, f) return ARGV[a + 4 + i * NF + f] end

local function split(s, sep)
  local out = {}
  for part in string.gmatch(s, sep) do
    out[#out + 1] = part
  end
  return out
end

-- check refuses the whole call before any write: Redis does not undo a
-- script's writes when it stops half-way. It runs first, so it also gives
-- the scheduler the keys of the nodes' tenants and groups.
local function check()
  local seen = {}
  for i = 0, n - 1 do
    local tn, g = arg(i, 3), arg(i, 4)
    if P ~= '' and (tn ~= '' or g ~= '') then
      scoped().known(tn, arg(i, 14), g, arg(i, 15))
    end
    local ukk = arg(i, 10)
    if ukk ~= '' then
      local h = redis.call('GET', ukk)
      if seen[ukk] then
        return {'dup', i, ''}
      end
      seen[ukk] = true
      if h then
        local q = qs[tonumber(arg(i, 0))]
        local v = redis.call('HMGET', q.jp .. h, 'st', 'ca', 'uf')
        local uf = num(v[3])
        if v[1] and ((uf > 0 and num(v[2]) + uf > now) or (uf <= 0 and not final(v[1]))) then
          return {'dup', i, h}
        end
      end
    end
    if g ~= '' then
      local grp = scoped().group(g)
      if grp and (grp.cr or grp.da > 0) then
        return {'gc', g}
      end
    end
    local ids = split(arg(i, 20), '[^,]+')
    for k, pk in ipairs(split(arg(i, 19), '[^%z]+')) do
      if redis.call('EXISTS', pk) == 0 then
        return {'nf', i, ids[k]}
      end
    end
  end
  return nil
end

-- state decides a new job's state from its parents pks.
local function state(pks, run, ra)
  local left, cb = 0, nil
  for _, pk in ipairs(pks) do
    local st = redis.call('HGET', pk, 'st')
    if st ~= 'completed' then
      if final(st) then
        if not run and not cb then cb = {pk, st} end
      else
        left = left + 1
      end
    end
  end
  if cb then return 'cancelled', left, cb end
  if left > 0 then return 'blocked', left end
  if ra > now then return 'scheduled', 0 end
  return 'ready', 0
end

-- Optional job fields as in enqueue.lua: a number's '0' is unset too.
local OPT = {{'p', 2}, {'tn', 3}, {'g', 4}, {'to', 8, true}, {'uk', 9}, {'ukk', 10}, {'uf', 11, true}, {'wh', 12},
  {'tc', 13}}

local function store(i, made)
  local q = qs[tonumber(arg(i, 0))]
  local last = q.last or num(redis.call('GET', q.seq))
  q.last = math.max(now, last + 1)
  local seq = string.format('%016.0f', q.last)
  local pr, ra = arg(i, 5), tonumber(arg(i, 6))
  local h = {'k', arg(i, 1), 'pr', pr, 'ma', arg(i, 7), 'ca', snow, 'ua', snow}
  for _, o in ipairs(OPT) do
    local v = arg(i, o[2])
    if v ~= '' and not (o[3] and v == '0') then
      h[#h + 1], h[#h + 2] = o[1], v
    end
  end
  local tn, g = arg(i, 3), arg(i, 4)
  local J = mkjob(q, seq, tn ~= '' and tn or nil, g ~= '' and g or nil, pr)
  local jk = J.jk
  local pks = split(arg(i, 19), '[^%z]+')
  local ids = split(arg(i, 20), '[^,]+')
  for _, k in ipairs(split(arg(i, 18), '[^,]+')) do
    pks[#pks + 1] = made[tonumber(k) + 1]
    ids[#ids + 1] = F.idof(made[tonumber(k) + 1])
  end
  local run = arg(i, 17) == 'run'
  local st, left, cb = state(pks, run, ra)
  local le = ''
  if fid ~= '' then
    h[#h + 1], h[#h + 2], h[#h + 3], h[#h + 4] = 'fl', fid, 'fn', arg(i, 16)
    redis.call('RPUSH', fkey .. ':jobs', jk)
  end
  if #pks > 0 then
    h[#h + 1], h[#h + 2], h[#h + 3], h[#h + 4] = 'dp', table.concat(ids, ','), 'dl', n2s(left)
    if run then h[#h + 1], h[#h + 2] = 'opf', 'run' end
    for _, pk in ipairs(pks) do
      redis.call('SADD', pk .. ':ch', jk)
      redis.call('HSET', pk, 'ch', '1')
      redis.call('RPUSH', jk .. ':pa', pk)
    end
  end
  if J.g then
    if not scoped().group(J.g) then
      redis.call('HSET', scoped().gkey(J.g), 'ca', SNOW)
      scoped().forget_group(J.g)
    end
    redis.call('SADD', scoped().gkey(J.g) .. ':open', jk)
  end
  redis.call('ZADD', q.jobs, 0, seq)
  if st == 'ready' then
    h[#h + 1], h[#h + 2] = 'ra', snow
    st = ready(J, nil, h)
  else
    h[#h + 1], h[#h + 2] = 'ra', (ra > now) and n2s(ra) or snow
    h[#h + 1], h[#h + 2] = 'st', st
    if st == 'scheduled' then
      redis.call('ZADD', q.scheduled, n2s(ra), seq)
      timed()
    elseif st == 'blocked' then
      redis.call('ZADD', F.blocked(q), 0, seq)
    else
      le = F.reason(cb[1], cb[2])
      h[#h + 1], h[#h + 2], h[#h + 3], h[#h + 4] = 'fa', snow, 'le', le
      h[#h + 1], h[#h + 2] = 'cb', cb[1]
      redis.call('ZADD', q.cancelled, snow, seq)
    end
    move(J, nil, st)
  end
  redis.call('HSET', jk, unpack(h))
  local ukk = arg(i, 10)
  if ukk ~= '' and st ~= 'cancelled' then
    local uf = tonumber(arg(i, 11))
    if uf > 0 then
      redis.call('SET', ukk, seq, 'PX', n2s(math.ceil(uf / 1000)))
    else
      redis.call('SET', ukk, seq)
    end
  end
  return jk, {seq, st, le}
end

-- backlog refuses the call, as an enqueue does ({'bf', tenant, backlog,
-- cap}), when the nodes that are ready at once (no parent in the flow,
-- every other parent done, due now) would pass their tenant's backlog
-- cap. Nodes that wait for a parent join the backlog only when released.
local function backlog()
  if P == '' then
    return nil
  end
  local adds = {}
  for i = 0, n - 1 do
    local tn = arg(i, 3)
    if tn ~= '' and arg(i, 18) == '' and
        state(split(arg(i, 19), '[^%z]+'), arg(i, 17) == 'run', tonumber(arg(i, 6))) == 'ready' then
      local no = backlog_take(adds, tn)
      if no then
        return no
      end
    end
  end
  return nil
end

local no = check() or backlog()
if no then
  return no
end
local made, out = {}, {}
for i = 0, n - 1 do
  made[i + 1], out[i + 1] = store(i, made)
end
if fid ~= '' then
  redis.call('HSET', fkey, 'n', fname, 'ca', snow)
end
for _, q in ipairs(qs) do
  if q.last then
    redis.call('SET', q.seq, n2s(q.last))
    register(q)
  end
end
settle()
return {snow, out, wake(qs)}
