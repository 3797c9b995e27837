-- lean_now: the time of a lean script's run, which begins every lean
-- script (scripts.go): ARGV[1] when the caller gives it (µs), else Redis
-- TIME; now as a number, snow as text.
local now, snow
if ARGV[1] ~= '' then
  now, snow = tonumber(ARGV[1]), ARGV[1]
else
  local t = redis.call('TIME')
  snow = t[1] .. string.rep('0', 6 - #t[2]) .. t[2]
  now = tonumber(snow)
end
