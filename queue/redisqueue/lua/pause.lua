-- pause: stop a tenant, group or queue starting jobs until now plus a
-- duration (µs; 0 or less ends a pause at once), keeping a later end in
-- force. KEYS: the scope's hash (tenant, group) or the queue's pause key.
-- Own arguments: kind (tenant|group|queue), name, duration, and for a
-- queue its channel. A paused
-- tenant's or group's pending jobs move to waiting; a resumed one's waiting
-- jobs start as far as there is room (in any queue: non-Cluster Redis).
-- Returns {'ok', end in force, now} or {'nf'} for an unknown group.
local qs, a = queues()
local now, snow = now_us()
local kind, name, e = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2])
if e > 0 then
  e = now + e
else
  e = 0
end

local function later(cur)
  if e == 0 then
    return 0
  end
  return math.max(cur, e)
end

if kind == 'queue' then
  local u = later(num(redis.call('GET', KEYS[1])))
  if u > now then
    redis.call('SET', KEYS[1], n2s(u))
  else
    redis.call('DEL', KEYS[1])
    redis.call('PUBLISH', ARGV[a + 3], '1')
  end
  return {'ok', n2s(u), snow}
end
local X = scoped()
if kind == 'group' then
  X.known('', '', name, KEYS[1])
else
  X.known(name, KEYS[1], '', '')
end
if kind == 'group' and not X.group(name) then
  return {'nf'}
end
local u = later(num(redis.call('HGET', KEYS[1], 'pu')))
redis.call('HSET', KEYS[1], 'pu', n2s(u))
if kind == 'tenant' then
  -- A pause is a setting of the tenant's own: it keeps it listed.
  redis.call('ZADD', X.REG, 0, name)
end
X.forget()
local fill, wm = X.fill_tenant, 't:' .. name
if kind == 'group' then
  fill, wm = X.fill_group, 'g:' .. name
end
if u <= now then
  fill(name)
else
  X.wake_at(wm, u)
  for _, m in ipairs(redis.call('ZRANGE', KEYS[1] .. ':pending', 0, -1)) do
    local J = X.load(string.sub(m, 17))
    if J and J.st == 'pending' then
      X.hold(J)
    end
  end
end
settle()
wake(qs)
return {'ok', n2s(u), snow}
