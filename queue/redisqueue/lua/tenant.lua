-- tenant: read a tenant's own settings, pause and job counts, and the
-- defaults, in one atomic read. KEYS: the tenant's hash, the defaults hash.
-- Returns {now, tenant fields, default fields}.
queues()
local _, snow = now_us()
return {snow,
  redis.call('HMGET', KEYS[1], 'l', 'w', 'b', 'mw', 'pu',
    'n:scheduled', 'n:pending', 'n:waiting', 'n:active', 'n:retrying'),
  redis.call('HMGET', KEYS[2], 'l', 'w', 'b', 'mw')}
