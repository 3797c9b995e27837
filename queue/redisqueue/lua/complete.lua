-- complete: end attempts in success, for one job or many of one queue at
-- once (concurrent calls merged into one run). KEYS: queue group. Own
-- arguments: the number of jobs, then per job: seq, token, result.
-- Returns one code per job: 'ok', or the fence's error code.
local qs, a = queues()
local q = qs[1]
local now, snow = now_us()
local n = tonumber(ARGV[a])
local out, done, scored = {}, {}, {}
for i = 0, n - 1 do
  local b = a + 1 + 3 * i
  local seq, res = ARGV[b], ARGV[b + 2]
  local jk = q.jp .. seq
  local e, v = fence(jk, ARGV[b + 1], 'ukk', 'uf', 'tn', 'g', 'vo', 'vb', 'k', 'at', 'ch')
  if e then
    out[i + 1] = e
  else
    -- finish and leave_active, with the index writes gathered below
    local h = {'st', 'completed', 'fa', snow, 'ua', snow, 'tk', '', 'lu', '', 'wk', ''}
    if res ~= '' then
      h[#h + 1] = 'rs'
      h[#h + 1] = res
    end
    redis.call('HSET', jk, unpack(h))
    release_unique(v[1], v[2], seq, true)
    append_job_event(q, jk, seq, 'completed', snow, {v[7], v[3], v[4], v[8]})
    if v[3] or v[4] then
      move(mkjob(q, seq, v[3], v[4], nil, v[5], v[6]), 'active', 'completed')
    end
    if v[9] then
      flow_hook(jk, 'completed')
    end
    done[#done + 1] = seq
    scored[#scored + 1] = snow
    scored[#scored + 1] = seq
    out[i + 1] = 'ok'
  end
end
zrem(q.active, done)
for j = 1, #scored, 1000 do
  redis.call('ZADD', q.completed, unpack(scored, j, math.min(j + 999, #scored)))
end
settle()
wake(qs)
return out
