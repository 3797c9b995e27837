-- cleanup: delete finished jobs of one queue past their retention, oldest
-- first per state. Own arguments: limit, then the retention (µs) of
-- completed, failed and cancelled jobs, '' to keep forever. Returns the
-- number deleted.
--
-- A job of a group is kept until the group has ended (scope.lua's ended:
-- done, and its completion job finished) and its retention has passed
-- since then. Such a job found too early is not deleted but moved later
-- in its index (the score is when its retention starts, see keys.go):
-- to the group's end once known, else to now, so the cleaner looks at it
-- again one retention later instead of on every run, and it never stands
-- in front of jobs that may go.
local qs, a = queues()
local q = qs[1]
local now, snow = now_us()
local left, deleted = tonumber(ARGV[a]), 0

-- retain returns the score to move a job of group g (false: none) to, or
-- nil when it may be deleted: its retention ended at cut.
local function retain(g, cut)
  if P == '' or not g then
    return nil
  end
  local e = scoped().ended(g)
  if e == nil then
    return snow
  end
  if e > cut then
    return n2s(e)
  end
  return nil
end

-- gone_job deletes job seq (hash jk) whose fields g, ukk, uk, fa and fl
-- are in v. A group's completion job (unique key 'group:' and the group
-- id) leaves its finish time in the group first, as the group's end; a
-- flow's job leaves its flow, whose record goes with its last job.
local function gone_job(jk, seq, v)
  release_unique(v[2], nil, seq, false)
  if P ~= '' and v[3] and string.sub(v[3], 1, 6) == 'group:' then
    scoped().keep_end(string.sub(v[3], 7), jk, num(v[4]))
  end
  if P ~= '' and v[5] then
    flows().gone(jk, v[5])
  end
  redis.call('DEL', jk, jk .. ':errors', jk .. ':ch', jk .. ':pa')
end

for i, st in ipairs({'completed', 'failed', 'cancelled'}) do
  local keep = ARGV[a + i]
  if keep ~= '' and left > 0 then
    local cut = now - tonumber(keep)
    local old = redis.call('ZRANGEBYSCORE', q[st], '-inf', n2s(cut), 'LIMIT', 0, left)
    local gone, later = {}, {}
    for _, seq in ipairs(old) do
      local jk = q.jp .. seq
      local v = redis.call('HMGET', jk, 'g', 'ukk', 'uk', 'fa', 'fl')
      local at = retain(v[1], cut)
      if at then
        later[#later + 1] = at
        later[#later + 1] = seq
      else
        gone[#gone + 1] = seq
        gone_job(jk, seq, v)
      end
    end
    for j = 1, #later, 1000 do
      redis.call('ZADD', q[st], unpack(later, j, math.min(j + 999, #later)))
    end
    zrem(q[st], gone)
    zrem(q.jobs, gone)
    left = left - #old
    deleted = deleted + #gone
  end
end
-- Finish tags at or behind the queue's virtual time say nothing a missing
-- one does not. The virtual time itself stays, as on every store: an idle
-- queue's next jobs are tagged from it.
local f = redis.call('HGETALL', q.sched)
local v, old = 0, {}
for i = 1, #f, 2 do
  if f[i] == 'v' then
    v = tonumber(f[i + 1])
  end
end
for i = 1, #f, 2 do
  if string.sub(f[i], 1, 2) == 'f:' and tonumber(f[i + 1]) <= v then
    old[#old + 1] = f[i]
  end
end
for i = 1, #old, 1000 do
  redis.call('HDEL', q.sched, unpack(old, i, math.min(i + 999, #old)))
end
return deleted
