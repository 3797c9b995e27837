-- progress: record a running job's progress, fenced by its lease. KEYS:
-- queue group. Own arguments: seq, token, the progress as JSON (percent
-- and data). Sets pg (the JSON) and pa (when, µs) on the job and logs a
-- job.progress event. Returns 'ok' or the fence's error code.
local qs, a = queues()
local q = qs[1]
local now, snow = now_us()
local seq, token, pg = ARGV[a], ARGV[a + 1], ARGV[a + 2]
local jk = q.jp .. seq
local e, v = fence(jk, token, 'k', 'tn', 'g', 'at')
if e then
  return {e}
end
redis.call('HSET', jk, 'pg', pg, 'pa', snow)
log_job(q, seq, 'job.progress', 'active', snow, {k = v[1], tn = v[2], g = v[3], at = v[4], d = pg})
return {'ok'}
