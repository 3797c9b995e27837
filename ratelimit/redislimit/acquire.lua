-- Grants one in-flight lease, decided with window requests in one atomic
-- step. Prepended by Go with decide.lua wrapped as the function
-- decide(KEYS, ARGV), which judges (and, when all admit, counts) window
-- requests exactly as a Consume call does.
--
-- KEYS     the window counters (n of them), then the lease sorted set.
-- ARGV     decide.lua's arguments for one decision (time, least key
--          lifetime, 1, n, five per request), then: the in-flight maximum,
--          the lease TTL in microseconds, the lease ID.
--
-- Reply: granted (1 or 0), leases held after, retry after in
-- microseconds when the in-flight limit is full (else 0), then
-- decide.lua's reply for the window requests.

local argv = {}
for i, v in ipairs(ARGV) do argv[i] = v end
local now = tonumber(argv[1])
if not now then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
  argv[1] = string.format('%.0f', now)
end
local n = tonumber(argv[4])
local a = 5 + 5 * n
local max, ttl, id = tonumber(argv[a]), tonumber(argv[a + 1]), argv[a + 2]
local lk = KEYS[n + 1]
redis.call('ZREMRANGEBYSCORE', lk, '-inf', now)
local held = redis.call('ZCARD', lk)
local out
if held >= max then
  for i = 1, n do argv[5 * i + 4] = '0' end -- peek: nothing counts
  out = decide(KEYS, argv)
  local first = redis.call('ZRANGE', lk, 0, 0, 'WITHSCORES')
  local retry = tonumber(first[2]) - now
  table.insert(out, 1, retry)
  table.insert(out, 1, held)
  table.insert(out, 1, 0)
  return out
end
out = decide(KEYS, argv)
local all = 1
for i = 1, n do
  if out[5 * i - 4] ~= 1 then all = 0 end
end
if all == 1 then
  redis.call('ZADD', lk, now + ttl, id)
  held = held + 1
  local ms = math.floor((ttl + 999) / 1000)
  local minttl = tonumber(argv[2])
  if ms < minttl then ms = minttl end
  if redis.call('PTTL', lk) < ms then redis.call('PEXPIRE', lk, ms) end
end
table.insert(out, 1, 0)
table.insert(out, 1, held)
table.insert(out, 1, all)
return out
