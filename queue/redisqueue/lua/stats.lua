-- stats: count one queue's jobs per state from its indexes, in one atomic
-- read. Returns the counts in the order of STATES.
local qs = queues()
local q = qs[1]
local out = {}
for i, st in ipairs({'scheduled', 'pending', 'waiting', 'active', 'retrying', 'completed',
    'failed', 'cancelled'}) do
  out[i] = redis.call('ZCARD', q[st])
end
return out
