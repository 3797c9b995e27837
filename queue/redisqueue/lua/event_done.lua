-- event_done: end a claim, fenced by its token: acknowledge the event
-- (delete it) or make it due again after a delay. Own arguments: outbox
-- prefix, id, token, delay (µs) or '' to acknowledge. KEYS: the event's
-- hash (outbox.go builds it from the id). Returns 'ok' or 'll' when the
-- token does not hold the event.
local _, a = queues()
local now = now_us()
local p, id, tok, after = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
local ek = KEYS[1]
if tok == '' or redis.call('HGET', ek, 'tk') ~= tok then
  return 'll'
end
if after == '' then
  redis.call('DEL', ek)
  redis.call('ZREM', p .. 'due', id)
else
  redis.call('HDEL', ek, 'tk')
  redis.call('ZADD', p .. 'due', n2s(now + math.max(tonumber(after), 0)), id)
end
return 'ok'
