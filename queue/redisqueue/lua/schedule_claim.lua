-- schedule_claim: claim a tick (queue.ScheduleStore.ClaimTick): move the
-- last tick from prev to tick while it is prev, the schedule runs and no
-- claim is unfinished.
-- KEYS[1] the schedule's hash. ARGV[1] prev, ARGV[2] tick, ARGV[3] '1'
-- when the tick runs (the claim stays unfinished until its job is
-- recorded) or '0' when it is dropped, ARGV[4] now. Times are Unix ns.
-- Returns 1 when claimed, 0 otherwise.
local s = redis.call('HMGET', KEYS[1], 'lt', 'pa', 'pd')
if s[1] ~= ARGV[1] or s[2] ~= '0' or s[3] ~= '0' then
  return 0
end
redis.call('HSET', KEYS[1], 'lt', ARGV[2], 'pd', ARGV[3], 'cl', ARGV[4])
return 1
