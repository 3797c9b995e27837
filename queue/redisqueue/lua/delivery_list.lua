-- delivery_list: one page of the delivery log, newest first. Own
-- arguments: outbox prefix, cursor (a sequence; '' for the newest),
-- count, then the filters (event id, job id, subscription; '' for none).
-- The most selective filter picks the index walked; the others are checked
-- per entry. Returns per entry {seq, fields in DELIVERY order}.
local _, a = queues()
local p, cursor, count = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2])
local ev, job, sub = ARGV[a + 3], ARGV[a + 4], ARGV[a + 5]
local idx = p .. 'log'
if ev ~= '' then
  idx = p .. 'log:event:' .. esc(ev)
elseif job ~= '' then
  idx = p .. 'log:job:' .. esc(job)
elseif sub ~= '' then
  idx = p .. 'log:sub:' .. esc(sub)
end
local upto = '+inf'
if cursor ~= '' then
  upto = '(' .. cursor
end
local out = {}
while #out < count do
  local r = redis.call('ZREVRANGEBYSCORE', idx, upto, '-inf', 'LIMIT', 0, 256)
  for _, s in ipairs(r) do
    upto = '(' .. s
    local v = redis.call('HMGET', p .. 'delivery:' .. s,
      'ev', 'et', 'j', 'g', 's', 'u', 'a', 't', 'c', 'l', 'e', 'o')
    if v[1] and (job == '' or v[3] == job) and (sub == '' or v[5] == sub) then
      out[#out + 1] = {s, v}
      if #out >= count then
        break
      end
    end
  end
  if #r < 256 then
    break
  end
end
return out
