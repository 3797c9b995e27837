-- Shared by every script: it is prepended to each one.
--
-- Conventions:
--   * KEYS holds one group of NK keys per queue (see queueKeyNames in
--     keys.go); a per-job script appends the job hash and its error list.
--   * ARGV[1] is now in Unix microseconds, or '' to read Redis TIME.
--     ARGV[2] is the number of queues; then, per queue, its job key prefix
--     and its notification channel. A script's own arguments follow.
--   * A job hash holds only the fields that are set (missing = zero):
--       k kind, p payload, tn tenant, g group, pr priority, ra run at,
--       ma max attempts, to timeout (ns), uk unique key, ukk the key that
--       holds it, uf unique-for (µs), st state, at attempt, sl stalls,
--       le last error, rs result, cr cancel requested, tk token,
--       lu lease until, wk worker, ca created, ua updated, sa started,
--       fa finished. Times are Unix microseconds.
--   * Numbers go to Redis through n2s: a Lua number would be written in
--     exponent form by some runtimes; integers below 2^53 are exact.

local NK = 10
local MAX_HISTORY = __MAX_HISTORY__
local NAMES = {'pending', 'scheduled', 'retrying', 'active', 'completed',
  'failed', 'cancelled', 'waiting', 'jobs', 'seq'}

local function n2s(n)
  return string.format('%.0f', n)
end

local function now_us()
  if ARGV[1] ~= '' then
    return tonumber(ARGV[1])
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- queues reads the queue groups; it returns them and the index of the
-- script's first own argument.
local function queues()
  local n = tonumber(ARGV[2])
  local qs = {}
  for i = 0, n - 1 do
    local q = {jp = ARGV[3 + 2 * i], ch = ARGV[4 + 2 * i], wake = false}
    for j = 1, NK do
      q[NAMES[j]] = KEYS[i * NK + j]
    end
    qs[i + 1] = q
  end
  return qs, 3 + 2 * n
end

local function final(st)
  return st == 'completed' or st == 'failed' or st == 'cancelled'
end

-- add_pending makes a job ready. A queue whose ready set was empty is
-- marked to wake its workers: while it is not empty, they are busy or
-- about to lease anyway.
local function add_pending(q, seq, pr)
  if redis.call('ZCARD', q.pending) == 0 then
    q.wake = true
  end
  redis.call('ZADD', q.pending, pr, seq)
end

-- wake publishes on the channel of every marked queue and returns their
-- positions (1-based), so the caller can wake its own process at once.
local function wake(qs)
  local out = {}
  for i, q in ipairs(qs) do
    if q.wake then
      redis.call('PUBLISH', q.ch, '1')
      out[#out + 1] = i
    end
  end
  return out
end

-- release_unique frees the job's unique key if this job still holds it.
-- With only_final, a key held for a time window is kept (the window
-- outlives the job's end); without, every key goes (the job is deleted).
local function release_unique(jk, seq, only_final)
  local v = redis.call('HMGET', jk, 'ukk', 'uf')
  if not v[1] then
    return
  end
  if only_final and tonumber(v[2] or '0') > 0 then
    return
  end
  if redis.call('GET', v[1]) == seq then
    redis.call('DEL', v[1])
  end
end

-- finish moves a job to a final state at now. The caller has taken it out
-- of its previous index and cleared its lease.
local function finish(q, jk, seq, st, now)
  redis.call('HSET', jk, 'st', st, 'fa', n2s(now), 'ua', n2s(now))
  redis.call('ZADD', q[st], n2s(now), seq)
  release_unique(jk, seq, true)
end

-- leave_active takes a job out of active: index and lease fields.
local function leave_active(q, jk, seq)
  redis.call('ZREM', q.active, seq)
  redis.call('HDEL', jk, 'tk', 'lu', 'wk')
end

-- holder checks the fence: the job exists, is active and token holds it.
-- It returns an error code ('nf', 'll') or nil.
local function holder(jk, token)
  local v = redis.call('HMGET', jk, 'st', 'tk')
  if not v[1] then
    return 'nf'
  end
  if v[1] ~= 'active' or v[2] ~= token then
    return 'll'
  end
  return nil
end

-- record_error appends an attempt's error to the history (newest
-- MAX_HISTORY kept) and makes it the last error.
local function record_error(jk, ek, attempt, now, msg)
  redis.call('RPUSH', ek, attempt .. '|' .. n2s(now) .. '|' .. msg)
  redis.call('LTRIM', ek, -MAX_HISTORY, -1)
  redis.call('HSET', jk, 'le', msg)
end

-- read returns a job as {fields, errors}.
local function read(jk, ek)
  return {redis.call('HGETALL', jk), redis.call('LRANGE', ek, 0, -1)}
end

-- zrem removes members from a sorted set in chunks (unpack has a limit).
local function zrem(key, members)
  for i = 1, #members, 1000 do
    redis.call('ZREM', key, unpack(members, i, math.min(i + 999, #members)))
  end
end

