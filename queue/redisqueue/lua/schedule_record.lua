-- schedule_record: record a schedule's run (queue.ScheduleStore.RecordRun).
-- KEYS[1] the schedule's hash. ARGV[1] the tick (Unix ns, '0' for a run
-- triggered by hand), ARGV[2] the job id, ARGV[3] now.
-- The run of a tick finishes its claim, only while the tick is the last
-- one claimed. Returns {'ok'} or {'nf'}.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'nf'}
end
if ARGV[1] ~= '0' then
  if redis.call('HGET', KEYS[1], 'lt') ~= ARGV[1] then
    return {'ok'}
  end
  redis.call('HSET', KEYS[1], 'pd', '0')
end
redis.call('HSET', KEYS[1], 'lj', ARGV[2], 'rt', ARGV[1], 'ra', ARGV[3])
return {'ok'}
