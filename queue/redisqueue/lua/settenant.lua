-- settenant: store a tenant's own settings, or the defaults, and apply
-- them at once: waiting jobs start if the limit rose. KEYS: the tenant's
-- hash (or the defaults hash). Own arguments: tenant ('' for the
-- defaults), limit, weight, backlog, MaxWait (µs). The released jobs may
-- be in any queue: their keys are derived (non-Cluster Redis only).
local qs, a = queues()
now_us()
local name = ARGV[a]
redis.call('HSET', KEYS[1], 'l', ARGV[a + 1], 'w', ARGV[a + 2], 'b', ARGV[a + 3], 'mw', ARGV[a + 4])
local X = scoped()
X.forget()
if name ~= '' then
  X.known(name, KEYS[1], '', '')
  redis.call('ZADD', X.REG, 0, name)
  X.fill_tenant(name)
else
  -- New defaults: every tenant with waiting jobs may have room now.
  for _, n in ipairs(redis.call('SMEMBERS', X.TW)) do
    X.fill_tenant(n)
  end
end
settle()
wake(qs)
return 'ok'
