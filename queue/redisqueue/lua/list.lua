-- list: one page of one queue's jobs in sequence order. Own arguments:
-- start (a ZRANGEBYLEX bound, or a ZREVRANGEBYLEX one when newest),
-- count, scan budget, newest (1: from the latest sequence down), tenant,
-- kind, group ('' does not filter), number of states, the states.
-- With any filter, at most budget jobs are looked at, so a rare value
-- cannot make one call walk a huge queue: the caller gets a short page
-- and the last sequence looked at, and goes on from there.
-- Returns {ended 1|0, last seq looked at, per job {seq, job}}.
local qs, a = queues()
local q = qs[1]
local start, count, budget = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
local newest = ARGV[a + 3] == '1'
local tenant, kind, grp = ARGV[a + 4], ARGV[a + 5], ARGV[a + 6]
local ns = tonumber(ARGV[a + 7])
local items, last = {}, ''
local function add(seq)
  local jk = q.jp .. seq
  items[#items + 1] = {seq, read(jk, jk .. ':errors')}
end
local function range(from, n)
  if newest then
    return redis.call('ZREVRANGEBYLEX', q.jobs, from, '-', 'LIMIT', 0, n)
  end
  return redis.call('ZRANGEBYLEX', q.jobs, from, '+', 'LIMIT', 0, n)
end
if ns == 0 and tenant == '' and kind == '' and grp == '' then
  local r = range(start, count)
  for _, seq in ipairs(r) do
    add(seq)
    last = seq
  end
  if #r < count then
    return {1, last, items}
  end
  return {0, last, items}
end
local want = nil
if ns > 0 then
  want = {}
  for i = 1, ns do
    want[ARGV[a + 7 + i]] = true
  end
end
-- match reads only the fields the filter needs, not the whole job.
local function match(seq)
  local f = redis.call('HMGET', q.jp .. seq, 'st', 'tn', 'k', 'g')
  if not f[1] then
    return false
  end
  return (not want or want[f[1]]) and (tenant == '' or f[2] == tenant)
    and (kind == '' or f[3] == kind) and (grp == '' or f[4] == grp)
end
local scanned = 0
while scanned < budget do
  local chunk = math.min(256, budget - scanned)
  local r = range(start, chunk)
  for _, seq in ipairs(r) do
    scanned = scanned + 1
    last = seq
    if match(seq) then
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
