-- Decides one or more Consume calls ("decisions") in one atomic step, in
-- order. Each decision is all or nothing: its counters are written only
-- when every one of its requests is admitted. The semantics are those
-- documented by package ratelimit/limittest. Several decisions share one
-- run so that a batch pays for one script call and one TIME, not one each.
--
-- KEYS     the counters of every request, decision after decision.
-- ARGV[1]  the time in microseconds, or "" to read the server's TIME.
-- ARGV[2]  the least key lifetime in milliseconds (0 unless time is injected).
-- ARGV[3]  D, the number of decisions; ARGV[4 .. 3+D] their request counts.
--          A negative count -n judges n requests without counting any: the
--          results say whether each admits its cost, and nothing moves.
-- Then five arguments per request: algorithm (0 fixed window, 1 sliding
--          window, 2 token bucket), quota, window in microseconds,
--          capacity, cost.
--
-- Reply: five integers per request: allowed (1 or 0), used, remaining,
-- reset after and retry after in microseconds. A decision touching a key
-- that holds something other than a counter of this script moves nothing
-- and reports allowed -1 for that request and -2 for its others, so that
-- one bad key never aborts the other decisions of the run half-way.
--
-- Counter values carry their own window or time ("<window start> <count>"
-- for a fixed window, "<sub-window index> <count> <previous count>" for a
-- sliding window, "<theoretical arrival time>" for a token bucket), so a
-- value from an earlier window reads as stale whatever the key's expiry
-- says. A fixed window starts at the first call it counts; the sliding
-- window's sub-windows are aligned to multiples of the window. Arithmetic
-- stays in integers below 2^53, where Lua numbers are exact; quotients go
-- through fdiv, which corrects the rounding of a double division. The code
-- is otherwise written inline, with two tables per run, because this
-- script is the server-side cost of every decision.

local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
end
local floor = math.floor
-- floor(x / y) for integers 0 <= x < 2^53 and 0 < y: the double quotient
-- x / y may round up to the next integer, which a plain floor would keep.
local function fdiv(x, y)
  local q = floor(x / y)
  if q * y > x then
    q = q - 1
  elseif (q + 1) * y <= x then
    q = q + 1
  end
  return q
end
local decisions = tonumber(ARGV[3])
local out = {} -- the reply, filled with the state before each decision
local after = {} -- per request: used, reset, value, lifetime once counted
local minttl = tonumber(ARGV[2])
local first = 0 -- index of the decision's first request, less one
local base = decisions - 1 -- so that ARGV[5 * i + base] is request i's algorithm

for d = 1, decisions do
  local n = tonumber(ARGV[3 + d])
  local judge = n < 0
  if judge then n = -n end
  local all = true
  local bad = false -- the request whose counter holds something else

  for i = first + 1, first + n do
    local a = 5 * i + base
    local alg, q, win = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
    local cap, cost = tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
    local raw = redis.pcall('GET', KEYS[i])
    if type(raw) == 'table' then -- not a string: a foreign key
      bad, raw = i, false
    end
    local ok, ub, ua, rb, ra, retry, val, ttl
    if alg == '2' then
      -- GCRA: emission interval t rounded up, tolerance cap × t.
      local t = floor((win + q - 1) / q)
      local tat = now
      if raw then
        tat = tonumber(raw)
        if not tat then bad, tat = i, now end
        if tat < now then tat = now end
      end
      local new = tat + cost * t
      ok = new - now <= cap * t
      retry = 0
      if not ok and cost <= cap then retry = new - now - cap * t end
      ub, ua = floor((tat - now + t - 1) / t), floor((new - now + t - 1) / t)
      rb, ra = tat - now, new - now
      val, ttl = string.format('%.0f', new), new - now
    else
      local sw, sc, sp
      if raw then
        sw, sc, sp = string.match(raw, '^(%d+) (%d+) ?(%d*)$')
        if not sw then bad, sw, sc = i, '-2', '0' end
        sw, sc, sp = tonumber(sw), tonumber(sc), tonumber(sp) or 0
      end
      retry = 0
      if alg == '0' then
        -- The window [s, s + win) was started by the first counted call;
        -- without a current one, this call starts it (if it counts).
        local s, c = now, 0
        if raw and sc > 0 and now - sw < win then s, c = sw, sc end
        ok = c + cost <= q
        if not ok and cost <= q then retry = s + win - now end
        ub, ua, rb, ra = c, c + cost, 0, 0
        if c > 0 then rb = s + win - now end
        if c + cost > 0 then ra = s + win - now end
        val, ttl = string.format('%.0f %.0f', s, c + cost), s + win - now
      else
        local w = floor(now / win)
        local e = now - w * win
        local c, p = 0, 0
        if raw then
          if sw == w then
            c, p = sc, sp
          elseif sw == w - 1 then
            p = sc
          end
        end
        -- The previous sub-window weighs by the part of it still inside
        -- the sliding window, rounded up: never in the caller's favour.
        local x = p * (win - e)
        local est = fdiv(x, win)
        if est * win < x then est = est + 1 end
        est = est + c
        ok = est + cost <= q
        if not ok and cost <= q then
          local room = q - cost - c
          local e1 = win
          if room >= 0 and p > 0 then e1 = win - fdiv(room * win, p) end
          if e1 < win then
            retry = e1 - e
          else
            local e2 = 0
            if c > 0 then e2 = math.max(0, win - fdiv((q - cost) * win, c)) end
            retry = win - e + e2
          end
        end
        ub, ua, rb = est, est + cost, 0
        if c > 0 then rb = 2 * win - e elseif p > 0 then rb = win - e end
        ra = rb
        if cost > 0 then ra = 2 * win - e end
        val, ttl = string.format('%.0f %.0f %.0f', w, c + cost, p), 2 * win - e
      end
    end
    if not ok then all = false end
    local j = 5 * i - 4
    out[j], out[j + 1], out[j + 2], out[j + 3], out[j + 4] = ok and 1 or 0, ub, cap, rb, retry
    j = 4 * i - 3
    after[j], after[j + 1], after[j + 2], after[j + 3] = ua, ra, val, ttl
  end

  if bad or judge then all = false end
  for i = first + 1, first + n do
    local j, k = 5 * i - 4, 4 * i - 3
    if all then
      out[j + 1], out[j + 3] = after[k], after[k + 1]
      if tonumber(ARGV[5 * i + base + 4]) > 0 then
        local ttl = floor((after[k + 3] + 999) / 1000)
        if ttl < minttl then ttl = minttl end
        redis.call('SET', KEYS[i], after[k + 2], 'PX', ttl)
      end
    end
    local remaining = out[j + 2] - out[j + 1]
    if remaining < 0 then remaining = 0 end
    out[j + 2] = remaining
    if bad then -- the decision is void: -1 marks the culprit, -2 the rest
      out[j] = -2
      if i == bad then out[j] = -1 end
    end
  end
  first = first + n
end

return out
