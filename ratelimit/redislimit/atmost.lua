-- Grants as much of a cost as every limit admits now (a partial grant).
-- Prepended by Go with decide.lua wrapped as decide(KEYS, ARGV).
--
-- KEYS     the counters, as for decide.lua.
-- ARGV     decide.lua's arguments for one decision; every request's cost
--          is the most wanted.
--
-- Reply: the cost granted, then decide.lua's reply for the decision at
-- that cost (at cost 1 when nothing fits, a denial that counts nothing).

local argv = {}
for i, v in ipairs(ARGV) do argv[i] = v end
local now = tonumber(argv[1])
if not now then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
  argv[1] = string.format('%.0f', now)
end
local n = tonumber(argv[4])
local want = tonumber(argv[9])
for i = 1, n do argv[5 * i + 4] = '0' end
local out = decide(KEYS, argv)
local granted = want
for i = 1, n do
  if out[5 * i - 4] < 0 then -- a foreign key: report it as decide did
    table.insert(out, 1, 0)
    return out
  end
  if out[5 * i - 2] < granted then granted = out[5 * i - 2] end
end
if want == 0 then
  table.insert(out, 1, 0)
  return out
end
local cost = granted
if cost <= 0 then cost, granted = 1, 0 end
for i = 1, n do argv[5 * i + 4] = string.format('%.0f', cost) end
out = decide(KEYS, argv)
table.insert(out, 1, granted)
return out
