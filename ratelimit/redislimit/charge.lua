-- Counts cost whatever the limits say (an overdraft), then reports the
-- counters as they stand. Prepended by Go with decide.lua wrapped as the
-- function decide(KEYS, ARGV), which makes the report.
--
-- KEYS     the counters.
-- ARGV     decide.lua's arguments for one decision (time, least key
--          lifetime, 1, n, five per request).
--
-- Reply: decide.lua's reply for the requests at cost 0 (peeks), after
-- counting. A token bucket's arrival time moves on by cost × its emission
-- interval from max(arrival, now); a fixed window adds the cost to the
-- current window (starting one if none); a sliding window adds it to the
-- current sub-window.

local argv = {}
for i, v in ipairs(ARGV) do argv[i] = v end
local now = tonumber(argv[1])
if not now then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
  argv[1] = string.format('%.0f', now)
end
local floor, minttl = math.floor, tonumber(argv[2])
local n = tonumber(argv[4])
for i = 1, n do
  local a = 5 * i
  local alg, q, win, cost = argv[a], tonumber(argv[a + 1]), tonumber(argv[a + 2]), tonumber(argv[a + 4])
  argv[a + 4] = '0'
  if cost > 0 then
    local raw = redis.pcall('GET', KEYS[i])
    if type(raw) == 'table' then raw = false end
    local val, ttl
    if alg == '2' then
      local tat = tonumber(raw or '') or now
      if tat < now then tat = now end
      tat = tat + cost * floor((win + q - 1) / q)
      val, ttl = string.format('%.0f', tat), tat - now
    else
      local sw, sc, sp
      if raw then sw, sc, sp = string.match(raw, '^(%d+) (%d+) ?(%d*)$') end
      sw, sc, sp = tonumber(sw), tonumber(sc) or 0, tonumber(sp) or 0
      if alg == '0' then
        if not sw or sc == 0 or now - sw >= win then sw, sc = now, 0 end
        val, ttl = string.format('%.0f %.0f', sw, sc + cost), sw + win - now
      else
        local w = floor(now / win)
        local c, p = 0, 0
        if sw == w then c, p = sc, sp elseif sw == w - 1 then p = sc end
        val, ttl = string.format('%.0f %.0f %.0f', w, c + cost, p), 2 * win - (now - w * win)
      end
    end
    local ms = floor((ttl + 999) / 1000)
    if ms < minttl then ms = minttl end
    if ms < 1 then ms = 1 end
    redis.call('SET', KEYS[i], val, 'PX', ms)
  end
end
return decide(KEYS, argv)
