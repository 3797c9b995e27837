-- schedule_delete: delete a schedule (queue.ScheduleStore.DeleteSchedule).
-- KEYS[1] the schedule's hash, KEYS[2] the set of schedule names.
-- ARGV[1] name, ARGV[2] the caller's source, ARGV[3] the source that keeps
-- its schedules ('' for none).
-- Returns {'ok'}, {'nf'} or {'owned', source}.
local cur = redis.call('HGET', KEYS[1], 'src')
if not cur then
  return {'nf'}
end
if ARGV[3] ~= '' and cur == ARGV[3] and ARGV[2] ~= ARGV[3] then
  return {'owned', cur}
end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
return {'ok'}
