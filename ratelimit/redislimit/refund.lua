-- Gives back cost counted earlier, as far as the counters still hold it.
--
-- KEYS     the counters.
-- ARGV[1]  the time in microseconds, or "" to read the server's TIME.
-- Then five arguments per request, as for decide.lua.
--
-- Reply: how many counters changed.

local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
end
local floor, changed = math.floor, 0
for i = 1, #KEYS do
  local a = 5 * i - 3
  local alg, q, win, cost = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 4])
  local raw = redis.pcall('GET', KEYS[i])
  local val
  if type(raw) == 'string' and cost > 0 then
    if alg == '2' then
      local tat = tonumber(raw)
      if tat then
        tat = tat - cost * floor((win + q - 1) / q)
        if tat < now then tat = now end
        val = string.format('%.0f', tat)
      end
    else
      local sw, sc, sp = string.match(raw, '^(%d+) (%d+) ?(%d*)$')
      sw, sc, sp = tonumber(sw), tonumber(sc), tonumber(sp)
      if alg == '0' and sw and now - sw < win then
        local c = sc - cost
        if c < 0 then c = 0 end
        val = string.format('%.0f %.0f', sw, c)
      elseif alg == '1' and sw then
        local w = floor(now / win)
        if sw == w or sw == w - 1 then
          local c = sc - cost
          if c < 0 then c = 0 end
          val = string.format('%.0f %.0f %.0f', sw, c, sp or 0)
        end
      end
    end
  end
  if val then
    local ttl = redis.call('PTTL', KEYS[i])
    if ttl > 0 then
      redis.call('SET', KEYS[i], val, 'PX', ttl)
      changed = changed + 1
    end
  end
end
return changed
