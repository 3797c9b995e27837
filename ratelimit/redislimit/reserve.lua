-- Reserves the earliest slot every token bucket admits, up to a longest
-- wait; window limits must admit now. Prepended by Go with decide.lua
-- wrapped as decide(KEYS, ARGV).
--
-- KEYS     the counters, as for decide.lua.
-- ARGV     decide.lua's arguments for one decision, then the longest wait
--          in microseconds.
--
-- Reply: the delay in microseconds (0 when admitted at once or denied),
-- then decide.lua's reply. With a delay, a token bucket's tolerance is
-- checked at the reserved time and its arrival time moved past it.

local argv = {}
for i, v in ipairs(ARGV) do argv[i] = v end
local now = tonumber(argv[1])
if not now then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
  argv[1] = string.format('%.0f', now)
end
local n = tonumber(argv[4])
local maxwait = tonumber(argv[5 + 5 * n])
local costs = {}
for i = 1, n do
  costs[i] = argv[5 * i + 4]
  argv[5 * i + 4] = '0'
end
local peek = decide(KEYS, argv)
for i = 1, n do argv[5 * i + 4] = costs[i] end
local delay, fits = 0, true
for i = 1, n do
  if peek[5 * i - 4] < 0 then fits = false end
  local a = 5 * i
  local alg, q, win, cap = argv[a], tonumber(argv[a + 1]), tonumber(argv[a + 2]), tonumber(argv[a + 3])
  local cost = tonumber(costs[i])
  if alg == '2' then
    local t = math.floor((win + q - 1) / q)
    local d = peek[5 * i - 1] + cost * t - cap * t
    if d > delay then delay = d end
  elseif cost > peek[5 * i - 2] then
    fits = false
  end
end
if delay == 0 or delay > maxwait or not fits then
  local out = decide(KEYS, argv)
  table.insert(out, 1, 0)
  return out
end
-- Windows count now; buckets at now + delay, where each admits its cost.
local wkeys, wargv, at = {}, {argv[1], argv[2], '1', '0'}, now + delay
local out = {}
for i = 1, n do
  local a = 5 * i
  if argv[a] == '2' then
    local q, win, cap = tonumber(argv[a + 1]), tonumber(argv[a + 2]), tonumber(argv[a + 3])
    local cost = tonumber(costs[i])
    local t = math.floor((win + q - 1) / q)
    local tat = now + peek[5 * i - 1]
    if tat < at then tat = at end
    local new = tat + cost * t
    local ms = math.floor((new - now + 999) / 1000)
    local minttl = tonumber(argv[2])
    if ms < minttl then ms = minttl end
    if cost > 0 then redis.call('SET', KEYS[i], string.format('%.0f', new), 'PX', ms) end
    local used = math.floor((new - at + t - 1) / t)
    local rem = cap - used
    if rem < 0 then rem = 0 end
    out[5 * i - 4], out[5 * i - 3], out[5 * i - 2], out[5 * i - 1], out[5 * i] = 1, used, rem, new - now, 0
  else
    table.insert(wkeys, KEYS[i])
    for k = 0, 4 do table.insert(wargv, argv[a + k]) end
  end
end
if #wkeys > 0 then
  wargv[4] = tostring(#wkeys)
  local wout = decide(wkeys, wargv)
  local j = 0
  for i = 1, n do
    if argv[5 * i] ~= '2' then
      for k = 0, 4 do out[5 * i - 4 + k] = wout[5 * j + 1 + k] end
      j = j + 1
    end
  end
end
table.insert(out, 1, delay)
return out
