-- delivery_record: append one attempt to the delivery log and count it
-- in its event's progress, if the event is still in the outbox. Own
-- arguments: outbox prefix, then the entry: event id, event type, job id,
-- group, subscription, url, attempt, status, latency (ns), error, outcome,
-- final (1|0). KEYS, built by outbox.go from the entry's names: the
-- event's hash, its log:event index, the subscription's log:sub index and,
-- when the entry has a job, its log:job index. Returns the entry's
-- sequence.
--
-- Log keys, under the prefix: log:seq the last sequence; log the entries
-- (score = sequence); log:event:<id>, log:job:<id> and log:sub:<name> the
-- entries of one event, job or subscription (score = sequence), for
-- filters; delivery:<seq> an entry (a hash, fields as below; t is when it
-- was recorded, µs).
local _, a = queues()
local _, snow = now_us()
local p = ARGV[a]
local ev, job, sub, attempt = ARGV[a + 1], ARGV[a + 3], ARGV[a + 5], tonumber(ARGV[a + 7])
local seq = redis.call('INCR', p .. 'log:seq')
local s = n2s(seq)
local h = {'ev', ev, 's', sub, 'a', ARGV[a + 7], 't', snow, 'o', ARGV[a + 11]}
-- Optional fields; for a number (status, latency) '0' is unset too.
local opt = {{'et', 2}, {'j', 3}, {'g', 4}, {'u', 6}, {'c', 8, true}, {'l', 9, true}, {'e', 10}}
for _, o in ipairs(opt) do
  local v = ARGV[a + o[2]]
  if v ~= '' and not (o[3] and v == '0') then
    h[#h + 1] = o[1]
    h[#h + 1] = v
  end
end
redis.call('HSET', p .. 'delivery:' .. s, unpack(h))
redis.call('ZADD', p .. 'log', seq, s)
redis.call('ZADD', KEYS[2], seq, s)
redis.call('ZADD', KEYS[3], seq, s)
if job ~= '' then
  redis.call('ZADD', KEYS[4], seq, s)
end
local ek = KEYS[1]
if redis.call('EXISTS', ek) == 1 then
  local f = 'p:' .. sub
  local cur = redis.call('HGET', ek, f)
  local n, fin = 0, ARGV[a + 12] == '1'
  if cur then
    n = tonumber(string.match(cur, '^%d+'))
    fin = fin or string.sub(cur, -1) == '!'
  end
  local v = n2s(math.max(n + 1, attempt))
  if fin then
    v = v .. '!'
  end
  redis.call('HSET', ek, f, v)
end
return seq
