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
local function fair(v, f, w, pr, ag)
  local start = math.max(v, f)
  local fin = start + math.floor(__FAIR_UNIT__ / math.min(math.max(w, 1), __MAX_WEIGHT__))
  if ag > 0 then
    return start, fin, 0, start + pr * math.min(ag, __MAX_AGING_STEP__) * __FAIR_UNIT__
  end
  return start, fin, pr, start
end
