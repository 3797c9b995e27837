-- fair: the scripts' one definition of the fair order, backend.FairTag and
-- backend.FairOrder with their constants filled in from Go (scripts.go).
-- sched.lua's tag and lean_enqueue.lua both call it; fairtag_test.go
-- checks what each stores against the Go rule. It makes no table, and as a
-- function of the library (functions.go) it is built once, not per run.
--
-- fair returns, for a job of priority pr that becomes ready in a queue of
-- virtual time v and aging step ag, whose tenant has finish tag f and
-- weight w (1 for jobs without a tenant): its start tag, its tenant's next
-- finish tag, and its band and rank in the ready set.
--
-- It runs once per job made ready, so it spends no call on what most jobs
-- (weight 1, no aging) do not need.
local function fair(v, f, w, pr, ag)
  local start = v
  if f > v then
    start = f
  end
  local fin = start + __FAIR_UNIT__
  if w ~= 1 then
    fin = start + math.floor(__FAIR_UNIT__ / math.min(math.max(w, 1), __MAX_WEIGHT__))
  end
  if ag > 0 then
    return start, fin, 0, start + pr * math.min(ag, __MAX_AGING_STEP__) * __FAIR_UNIT__
  end
  return start, fin, pr, start
end
