-- Closes a gate until a time, or reports how long it stays closed when
-- ARGV[2] is "". A close never shortens another.
--
-- KEYS[1]  the gate.
-- ARGV[1]  the time in microseconds, or "" to read the server's TIME.
-- ARGV[2]  when the gate opens, in microseconds, or "" to report.
-- ARGV[3]  the least key lifetime in milliseconds (0 unless time is injected).
--
-- Reply: how long the gate stays closed, in microseconds (0 when open).

local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
end
local cur = tonumber(redis.call('GET', KEYS[1]) or '') or 0
local want = tonumber(ARGV[2])
if want and want > cur and want > now then
  cur = want
  local ms = math.floor((want - now + 999) / 1000)
  local minttl = tonumber(ARGV[3])
  if ms < minttl then ms = minttl end
  redis.call('SET', KEYS[1], string.format('%.0f', want), 'PX', ms)
end
if cur <= now then return 0 end
return cur - now
