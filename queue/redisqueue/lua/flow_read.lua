-- flow_read: read a flow's jobs or a job's relatives (see flowlib.lua for
-- the keys), in one atomic read. Own arguments (after the common ones,
-- with no queue): 'flow' and the flow's key; or 'rel', the job key and the
-- budget of parents' result bytes.
-- Returns for 'flow' {name, created, per job {id, fields, errors}} or
-- {'nf'}; for 'rel' {'ok', parents, children} or {'nf'}, a parent being
-- {id, state, kind, node, result, omitted 0|1} and a child {id, state,
-- kind, node}.
local _, a = queues()

local function idof(jk)
  local tag = string.match(jk, '{([^{}]*)}:job:%d+$')
  return string.sub(jk, -16) .. '-' .. id_part(tag)
end

if ARGV[a] == 'flow' then
  local fk = ARGV[a + 1]
  local v = redis.call('HMGET', fk, 'n', 'ca')
  if not v[2] then
    return {'nf'}
  end
  local jobs = {}
  for _, jk in ipairs(redis.call('LRANGE', fk .. ':jobs', 0, -1)) do
    if redis.call('EXISTS', jk) == 1 then
      jobs[#jobs + 1] = {idof(jk), redis.call('HGETALL', jk), redis.call('LRANGE', jk .. ':errors', 0, -1)}
    end
  end
  return {v[1] or '', v[2], jobs}
end

local jk, budget = ARGV[a + 1], tonumber(ARGV[a + 2])
if redis.call('EXISTS', jk) == 0 then
  return {'nf'}
end
local parents, children = {}, {}
for _, pk in ipairs(redis.call('LRANGE', jk .. ':pa', 0, -1)) do
  local v = redis.call('HMGET', pk, 'st', 'k', 'fn')
  if v[1] then
    local rs, omitted = '', 0
    local n = redis.call('HSTRLEN', pk, 'rs')
    if n > budget then
      omitted = 1
    elseif n > 0 then
      rs, budget = redis.call('HGET', pk, 'rs'), budget - n
    end
    parents[#parents + 1] = {idof(pk), v[1], v[2] or '', v[3] or '', rs, omitted}
  end
end
for _, ck in ipairs(redis.call('SMEMBERS', jk .. ':ch')) do
  local v = redis.call('HMGET', ck, 'st', 'k', 'fn')
  if v[1] then
    children[#children + 1] = {idof(ck), v[1], v[2] or '', v[3] or ''}
  end
end
return {'ok', parents, children}
