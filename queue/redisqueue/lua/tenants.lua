-- tenants: one step of the tenant list (queue.TenantLister): up to count
-- names of the tenant registry (sched.lua's P..'sched:tenants') from start,
-- a ZRANGEBYLEX bound, each with the fields tenant.lua reads, and the
-- defaults, in one atomic read. KEYS: the registry, the defaults hash. Own
-- arguments: start, count. The tenants' keys are derived here, which needs
-- the scheduler (non-Cluster Redis).
-- Returns {now, default fields, per tenant {name, fields}}.
local _, a = queues()
local _, snow = now_us()
local tp = ARGV[2] .. 'sched:t:'

local out = {}
for i, n in ipairs(redis.call('ZRANGEBYLEX', KEYS[1], ARGV[a], '+', 'LIMIT', 0, tonumber(ARGV[a + 1]))) do
  out[i] = {n, redis.call('HMGET', tp .. esc(n), 'l', 'w', 'b', 'mw', 'pu',
    'n:scheduled', 'n:pending', 'n:waiting', 'n:active', 'n:retrying')}
end
return {snow, redis.call('HMGET', KEYS[2], 'l', 'w', 'b', 'mw'), out}
