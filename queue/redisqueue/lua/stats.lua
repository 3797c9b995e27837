-- stats: count one queue's jobs per state from its indexes, in one atomic
-- read. Returns the counts in the order of STATES, then the end of a
-- pause in force (µs), or 0.
local qs = queues()
local q = qs[1]
local out = {}
for i, st in ipairs({'scheduled', 'pending', 'waiting', 'active', 'retrying', 'completed',
    'failed', 'cancelled', 'blocked'}) do
  out[i] = redis.call('ZCARD', q[st])
end
local now = now_us()
local pu = tonumber(redis.call('GET', q.paused) or '0') or 0
if pu <= now then
  pu = 0
end
out[#out + 1] = pu
return out
