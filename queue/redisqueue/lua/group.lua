-- group: read a group. KEYS: the group's hash. Returns {'ok', now,
-- fields} or {'nf'}.
queues()
local _, snow = now_us()
local f = redis.call('HGETALL', KEYS[1])
if #f == 0 then
  return {'nf'}
end
return {'ok', snow, f}
