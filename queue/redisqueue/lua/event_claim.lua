-- event_claim: claim up to max due events, oldest due first. Own
-- arguments: outbox prefix, max, claim length (µs), token base. Returns
-- per event {id, token, fields}.
local _, a = queues()
local now, snow = now_us()
local p, max = ARGV[a], tonumber(ARGV[a + 1])
local until_, tokens = n2s(now + tonumber(ARGV[a + 2])), ARGV[a + 3]
local due = p .. 'due'
local ids = redis.call('ZRANGEBYSCORE', due, '-inf', snow, 'LIMIT', 0, max)
local out, gone = {}, {}
for _, id in ipairs(ids) do
  -- The id is one append made (events.lua: 'evt_' and hex digits),
  -- which named the key with it as it is: nothing to escape.
  local ek = p .. 'event:' .. id
  local f = redis.call('HGETALL', ek)
  if #f == 0 then
    gone[#gone + 1] = id
  else
    local tok = tokens .. '.' .. (#out + 1)
    redis.call('HSET', ek, 'tk', tok)
    redis.call('ZADD', due, until_, id)
    out[#out + 1] = {id, tok, f}
  end
end
zrem(due, gone)
return out
