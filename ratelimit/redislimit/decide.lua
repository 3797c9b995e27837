-- Decides every request of one Consume call in one atomic step, all or
-- nothing: counters are written only when every request is admitted. The
-- semantics are those documented by package ratelimit/limittest.
--
-- KEYS[i]  the counter of request i (all keys share one hash tag).
-- ARGV[1]  the time in microseconds, or "" to read the server's TIME.
-- ARGV[2]  the least key lifetime in milliseconds (0 unless time is injected).
-- ARGV[2+5(i-1)+1..5]  request i: algorithm (0 fixed window, 1 sliding
--          window, 2 token bucket), quota, window in microseconds,
--          capacity, cost.
--
-- Reply: five integers per request: allowed (1 or 0), used, remaining,
-- reset after and retry after in microseconds.
--
-- Counter values carry their own window or time ("<window> <count>",
-- "<window> <count> <previous count>", "<theoretical arrival time>"), so a
-- value from an earlier window reads as stale whatever the key's expiry
-- says. Arithmetic stays in integers below 2^53, where Lua numbers are exact.

local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local minttl = tonumber(ARGV[2])
local floor = math.floor

local function ceildiv(a, b)
  return floor((a + b - 1) / b)
end

-- Each algorithm returns: allowed, used before, used after, reset before,
-- reset after, retry, the value to store, its lifetime in microseconds.
-- "After" is the state once the request is counted.

local function fixed(raw, quota, win, cost)
  local w = floor(now / win)
  local c = 0
  if raw then
    local sw, sc = string.match(raw, '^(%d+) (%d+)$')
    if not sw then return nil end
    if tonumber(sw) == w then c = tonumber(sc) end
  end
  local reset = (w + 1) * win - now
  local ok = c + cost <= quota
  local retry = 0
  if not ok and cost <= quota then retry = reset end
  local rb, ra = 0, 0
  if c > 0 then rb = reset end
  if c + cost > 0 then ra = reset end
  return ok, c, c + cost, rb, ra, retry, string.format('%.0f %.0f', w, c + cost), reset
end

local function slidingretry(p, c, quota, n, win, e)
  local a = quota - n - c
  if a >= 0 and p > 0 then
    local e1 = win - floor(((a + 1) * win - 1) / p)
    if e1 < win then return e1 - e end
  end
  local e2 = 0
  if c > 0 then
    e2 = win - floor(((quota - n + 1) * win - 1) / c)
    if e2 < 0 then e2 = 0 end
  end
  return win - e + e2
end

local function sliding(raw, quota, win, cost)
  local w = floor(now / win)
  local e = now - w * win
  local c, p = 0, 0
  if raw then
    local sw, sc, sp = string.match(raw, '^(%d+) (%d+) (%d+)$')
    if not sw then return nil end
    sw = tonumber(sw)
    if sw == w then
      c, p = tonumber(sc), tonumber(sp)
    elseif sw == w - 1 then
      p = tonumber(sc)
    end
  end
  local est = floor(p * (win - e) / win) + c
  local ok = est + cost <= quota
  local retry = 0
  if not ok and cost <= quota then retry = slidingretry(p, c, quota, cost, win, e) end
  local rb = 0
  if c > 0 then rb = 2 * win - e elseif p > 0 then rb = win - e end
  local ra = rb
  if cost > 0 then ra = 2 * win - e end
  return ok, est, est + cost, rb, ra, retry, string.format('%.0f %.0f %.0f', w, c + cost, p), 2 * win - e
end

-- GCRA: emission interval t = ceil(window / quota), tolerance cap × t.
local function bucket(raw, quota, win, cap, cost)
  local t = ceildiv(win, quota)
  local tat = now
  if raw then
    tat = tonumber(string.match(raw, '^(%d+)$'))
    if not tat then return nil end
  end
  if tat < now then tat = now end
  local new = tat + cost * t
  local ok = new - now <= cap * t
  local retry = 0
  if not ok and cost <= cap then retry = new - now - cap * t end
  return ok, ceildiv(tat - now, t), ceildiv(new - now, t), tat - now, new - now,
    retry, string.format('%.0f', new), new - now
end

local n = #KEYS
local res = {}
local all = true
for i = 1, n do
  local a = 2 + (i - 1) * 5
  local alg, quota, win = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local cap, cost = tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5])
  local raw = redis.call('GET', KEYS[i])
  if not raw then raw = nil end
  local r
  if alg == 0 then
    r = {fixed(raw, quota, win, cost)}
  elseif alg == 1 then
    r = {sliding(raw, quota, win, cost)}
  else
    r = {bucket(raw, quota, win, cap, cost)}
  end
  if r[1] == nil then
    return redis.error_reply('redislimit: malformed counter value at ' .. KEYS[i])
  end
  r[9], r[10] = cap, cost
  res[i] = r
  if not r[1] then all = false end
end

local out = {}
for i = 1, n do
  local r = res[i]
  local used, reset = r[2], r[4]
  if all then
    used, reset = r[3], r[5]
    if r[10] > 0 then
      local ttl = ceildiv(r[8], 1000)
      if ttl < minttl then ttl = minttl end
      redis.call('SET', KEYS[i], r[7], 'PX', ttl)
    end
  end
  local remaining = r[9] - used
  if remaining < 0 then remaining = 0 end
  local allowed = 0
  if r[1] then allowed = 1 end
  local j = (i - 1) * 5
  out[j + 1], out[j + 2], out[j + 3], out[j + 4], out[j + 5] = allowed, used, remaining, reset, r[6]
end
return out
