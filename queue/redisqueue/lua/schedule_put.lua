-- schedule_put: create or replace a schedule's definition (see
-- queue.ScheduleStore.PutSchedule).
-- KEYS[1] the schedule's hash, KEYS[2] the set of schedule names.
-- ARGV[1] name, ARGV[2] definition, ARGV[3] timing, ARGV[4] source,
-- ARGV[5] the source that keeps its schedules ('' for none), ARGV[6] now
-- (Unix ns). A new schedule is anchored at now (lt); a changed timing
-- re-anchors it and drops an unfinished claim (pd).
-- Returns {'ok'} or {'owned', source}.
local cur = redis.call('HGET', KEYS[1], 'src')
if ARGV[5] ~= '' and cur == ARGV[5] and ARGV[4] ~= ARGV[5] then
  return {'owned', cur}
end
local now = ARGV[6]
if not cur then
  redis.call('HSET', KEYS[1], 'ca', now, 'lt', now, 'pa', '0', 'pd', '0')
  redis.call('SADD', KEYS[2], ARGV[1])
elseif redis.call('HGET', KEYS[1], 'tm') ~= ARGV[3] then
  redis.call('HSET', KEYS[1], 'lt', now, 'pd', '0')
end
redis.call('HSET', KEYS[1], 'df', ARGV[2], 'tm', ARGV[3], 'src', ARGV[4], 'ua', now)
return {'ok'}
