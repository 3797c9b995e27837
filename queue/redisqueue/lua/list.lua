-- list: one page of one queue's jobs in sequence order. Own arguments:
-- start (a ZRANGEBYLEX bound), count, scan budget, number of states, the
-- states. With states, at most budget jobs are looked at, so a rare state
-- cannot make one call walk a huge queue.
-- Returns {ended 1|0, last seq looked at, per job {seq, job}}.
local qs, a = queues()
local q = qs[1]
local start, count, budget = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
local ns = tonumber(ARGV[a + 3])
local items, last = {}, ''
local function add(seq)
  local jk = q.jp .. seq
  items[#items + 1] = {seq, read(jk, jk .. ':errors')}
end
if ns == 0 then
  local r = redis.call('ZRANGEBYLEX', q.jobs, start, '+', 'LIMIT', 0, count)
  for _, seq in ipairs(r) do
    add(seq)
    last = seq
  end
  if #r < count then
    return {1, last, items}
  end
  return {0, last, items}
end
local want = {}
for i = 1, ns do
  want[ARGV[a + 3 + i]] = true
end
local scanned = 0
while scanned < budget do
  local chunk = math.min(256, budget - scanned)
  local r = redis.call('ZRANGEBYLEX', q.jobs, start, '+', 'LIMIT', 0, chunk)
  for _, seq in ipairs(r) do
    scanned = scanned + 1
    last = seq
    local st = redis.call('HGET', q.jp .. seq, 'st')
    if st and want[st] then
      add(seq)
      if #items >= count then
        return {0, last, items}
      end
    end
  end
  if #r < chunk then
    return {1, last, items}
  end
  start = '(' .. last
end
return {0, last, items}
