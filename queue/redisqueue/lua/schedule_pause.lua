-- schedule_pause: pause or resume a schedule
-- (queue.ScheduleStore.PauseSchedule).
-- KEYS[1] the schedule's hash. ARGV[1] '1' to pause, '0' to resume,
-- ARGV[2] now (Unix ns, as decimal text). Resuming a paused schedule
-- anchors it at now, so ticks passed while paused never run.
-- Returns {'ok'} or {'nf'}.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'nf'}
end
-- later reports whether decimal a is greater than decimal b, exactly (the
-- nanoseconds do not fit a Lua number).
local function later(a, b)
  if #a ~= #b then
    return #a > #b
  end
  return a > b
end
local was = redis.call('HGET', KEYS[1], 'pa')
if was == '1' and ARGV[1] == '0' then
  local lt = redis.call('HGET', KEYS[1], 'lt') or '0'
  if later(ARGV[2], lt) then
    lt = ARGV[2]
  end
  redis.call('HSET', KEYS[1], 'lt', lt, 'pd', '0')
end
redis.call('HSET', KEYS[1], 'pa', ARGV[1], 'ua', ARGV[2])
return {'ok'}
