-- delivery_list: one page of the delivery log, newest first. Own
-- arguments: outbox prefix, cursor (a sequence; '' for the newest),
-- count, then the filters (event id, job id, subscription; '' for none).
-- The most selective filter picks the index walked (outbox.go builds its
-- key, KEYS[1]: log:event, else log:job, else log:sub, else log); the
-- others are checked per entry. Returns per entry {seq, fields in
-- DELIVERY order}.
local _, a = queues()
local p, cursor, count = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2])
local job, sub = ARGV[a + 4], ARGV[a + 5]
local idx = KEYS[1]
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
