-- cancelgroup: cancel a group's jobs that have not started and flag its
-- running ones, in one step. KEYS: the group's hash. Own arguments: id.
-- The group's jobs may be in any queue: their keys are derived (non-Cluster
-- Redis only). Returns {'ok', now, fields} or {'nf'}.
local qs, a = queues()
local _, snow = now_us()
local id = ARGV[a]
local X = scoped()
X.known('', '', id, KEYS[1])
if not X.group(id) then
  return {'nf'}
end
X.cancel_group(id)
settle()
wake(qs)
return {'ok', snow, redis.call('HGETALL', KEYS[1])}
