-- Decides gates, in-flight leases and groups of window requests as one
-- admission, all or nothing. Prepended by Go with decide.lua wrapped as the
-- function decide(KEYS, ARGV), which judges and counts window requests
-- exactly as a Consume call does.
--
-- KEYS     the gates (g of them), the lease sorted sets (l), then the
--          counters of every group: its first choice's requests, then its
--          fallback's.
-- ARGV[1]  the time in microseconds, or "" to read the server's TIME.
-- ARGV[2]  the least key lifetime in milliseconds (0 unless time is injected).
-- ARGV[3]  g; ARGV[4] l; ARGV[5] G, the number of groups.
-- Then per lease: the in-flight maximum, the TTL in microseconds, the ID.
-- Then per group: the request counts of its first choice and its fallback.
-- Then five arguments per request, as for decide.lua.
--
-- Reply: allowed (1 or 0); per gate, how long it stays closed in
-- microseconds; per lease, leases held after and how long until the
-- earliest expires when full (else 0); per group, its choice (1 first, 2
-- fallback) and its retry after in microseconds; then decide.lua's five
-- integers for each request of each group's choice: after counting when
-- allowed, else judged for its cost on the counters as they stand.

local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
end
local snow = string.format('%.0f', now)
local g, l, G = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local allowed, retry = true, 0
local out = {0}

for i = 1, g do
  local left = 0
  local until_ = tonumber(redis.call('GET', KEYS[i]) or '')
  if until_ and until_ > now then left = until_ - now end
  if left > 0 then
    allowed = false
    if left > retry then retry = left end
  end
  table.insert(out, left)
end

local held = {}
for i = 1, l do
  local lk, a = KEYS[g + i], 6 + 3 * (i - 1)
  redis.call('ZREMRANGEBYSCORE', lk, '-inf', now)
  held[i] = redis.call('ZCARD', lk)
  local wait = 0
  if held[i] >= tonumber(ARGV[a]) then
    allowed = false
    local first = redis.call('ZRANGE', lk, 0, 0, 'WITHSCORES')
    wait = tonumber(first[2]) - now
    if wait > retry then retry = wait end
  end
  table.insert(out, held[i])
  table.insert(out, wait)
end

-- Judge every request of every group for its cost; nothing moves.
local c0 = 6 + 3 * l -- ARGV index of the first group's counts
local r0 = c0 + 2 * G -- ARGV index of the first request's arguments
local ckeys, jargv = {}, {snow, ARGV[2], tostring(2 * G)}
local n = 0
for k = 1, G do
  local np, nf = tonumber(ARGV[c0 + 2 * k - 2]), tonumber(ARGV[c0 + 2 * k - 1])
  table.insert(jargv, tostring(-np))
  table.insert(jargv, tostring(-nf))
  n = n + np + nf
end
for i = 1, n do
  ckeys[i] = KEYS[g + l + i]
  for k = 0, 4 do table.insert(jargv, ARGV[r0 + 5 * (i - 1) + k]) end
end
local judged = {}
if n > 0 then judged = decide(ckeys, jargv) end

-- A choice admits when every request does; its retry is the longest of
-- its denials. The first choice wins unless the fallback admits or would
-- admit sooner (ratelimit.ChooseGroup).
local function verdict(from, count)
  local ok, wait = true, 0
  for i = from, from + count - 1 do
    local f = judged[5 * i - 4]
    if f ~= 1 then ok = false end
    if f < 0 then wait = -1 end
    if f == 0 and wait >= 0 and judged[5 * i] > wait then wait = judged[5 * i] end
  end
  return ok, wait
end
local chosen = {} -- per group: first index and count of its choice
local first = 1
for k = 1, G do
  local np, nf = tonumber(ARGV[c0 + 2 * k - 2]), tonumber(ARGV[c0 + 2 * k - 1])
  local pok, pwait = verdict(first, np)
  local choice, from, count, ok, wait = 1, first, np, pok, pwait
  if not pok and nf > 0 then
    local fok, fwait = verdict(first + np, nf)
    if fok or (fwait >= 0 and fwait < pwait) then
      choice, from, count, ok, wait = 2, first + np, nf, fok, fwait
    end
  end
  if wait < 0 then
    return redis.error_reply('ERR admit: a counter holds something other than a counter')
  end
  if not ok then
    allowed = false
    if wait > retry then retry = wait end
  end
  chosen[k] = {from, count}
  table.insert(out, choice)
  table.insert(out, wait)
  first = first + np + nf
end

if not allowed then
  for k = 1, G do
    local from, count = chosen[k][1], chosen[k][2]
    for i = from, from + count - 1 do
      for j = 0, 4 do table.insert(out, judged[5 * i - 4 + j]) end
    end
  end
  return out
end

-- Count every chosen request as one decision (each admits: nothing moved
-- since it was judged), then take the leases.
local keys, argv = {}, {snow, ARGV[2], '1', '0'}
for k = 1, G do
  local from, count = chosen[k][1], chosen[k][2]
  for i = from, from + count - 1 do
    table.insert(keys, ckeys[i])
    for j = 0, 4 do table.insert(argv, ARGV[r0 + 5 * (i - 1) + j]) end
  end
end
argv[4] = tostring(#keys)
if #keys > 0 then
  local counted = decide(keys, argv)
  for _, v in ipairs(counted) do table.insert(out, v) end
end
local minttl = tonumber(ARGV[2])
for i = 1, l do
  local lk, a = KEYS[g + i], 6 + 3 * (i - 1)
  local ttl = tonumber(ARGV[a + 1])
  redis.call('ZADD', lk, now + ttl, ARGV[a + 2])
  out[1 + g + 2 * i - 1] = held[i] + 1
  local ms = math.floor((ttl + 999) / 1000)
  if ms < minttl then ms = minttl end
  if redis.call('PTTL', lk) < ms then redis.call('PEXPIRE', lk, ms) end
end
out[1] = 1
return out
