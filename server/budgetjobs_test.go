package server

import (
	"strings"
	"testing"
)

const budgetJobsConfig = `
budgets:
  definitions:
    llm:
      units:
        tokens: {quota: 100000, window: 24h}
      in_flight: 1
  queue_claims:
    q: {llm: {tokens: 1000}}
`

// Jobs leased through the worker protocol wait for their budgets: a held
// job is not handed out, spends no attempt and says what holds it; the
// admitted job's ticket is settled with the usage its worker reports; a
// plain job is untouched.
func TestBudgetJobsOverProtocol(t *testing.T) {
	t.Parallel()
	h := newHarness(t, budgetJobsConfig, true)
	a := h.do("POST", "/v1/jobs", "", `{"queue":"q","kind":"k"}`).body["job"].(map[string]any)["id"].(string)
	b := h.do("POST", "/v1/jobs", "", `{"queue":"q","kind":"k"}`).body["job"].(map[string]any)["id"].(string)
	l := h.do("POST", "/v1/worker/lease", "", `{"queues":["q"],"worker_id":"w","max":2}`)
	leases := l.body["leases"].([]any)
	if len(leases) != 1 {
		t.Fatalf("lease handed out %d jobs, want 1 (the budget's in-flight maximum): %s", len(leases), l.raw)
	}
	lease := leases[0].(map[string]any)
	if id := lease["job"].(map[string]any)["id"]; id != a {
		t.Fatalf("leased %v, want the first job %s", id, a)
	}

	r := h.do("GET", "/v1/jobs/"+b, "", "")
	hold, _ := r.body["hold"].(map[string]any)
	if r.body["state"] != "scheduled" || r.body["attempt"] != 0.0 || hold == nil ||
		hold["budget"] != "llm" || hold["limit"] != "in-flight" || hold["scope"] != "total" || hold["until"] == nil {
		t.Fatalf("held job = %s; want scheduled, no attempt spent, held by llm's in-flight maximum with a time", r.raw)
	}
	metrics := h.do("GET", "/metrics", "", "").raw
	for _, want := range []string{`sluice_jobs_held{budget="llm",queue="q"} 1`, `sluice_jobs_ready{queue="q"} 0`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	r = h.do("POST", "/v1/worker/jobs/"+a+"/complete", "", `{"token":"`+lease["token"].(string)+`","usage":{"llm":{"tokens":3000}}}`)
	if r.status != 200 {
		t.Fatalf("complete: %d %s", r.status, r.raw)
	}
	st := h.do("GET", "/v1/budgets/llm", "", "")
	used := map[string]float64{}
	for _, l := range st.body["limits"].([]any) {
		m := l.(map[string]any)
		used[m["limit"].(string)] = m["used"].(float64)
	}
	if used["tokens"] < 2990 || used["tokens"] > 3000 || used["in-flight"] != 0 {
		t.Errorf("after settling at 3000: %v, want 3000 tokens (less a few refilled) and nothing in flight", used)
	}

	// A plain job claims nothing and runs as before.
	p := h.do("POST", "/v1/jobs", "", `{"queue":"plain","kind":"k"}`).body["job"].(map[string]any)["id"].(string)
	l = h.do("POST", "/v1/worker/lease", "", `{"queues":["plain"],"worker_id":"w"}`)
	pl := l.body["leases"].([]any)[0].(map[string]any)
	if r := h.do("POST", "/v1/worker/jobs/"+p+"/complete", "", `{"token":"`+pl["token"].(string)+`","usage":{"llm":{"tokens":5}}}`); r.status != 200 {
		t.Fatalf("complete a plain job: %d %s", r.status, r.raw)
	}
	st = h.do("GET", "/v1/budgets/llm", "", "")
	for _, l := range st.body["limits"].([]any) {
		if m := l.(map[string]any); m["limit"] == "tokens" && m["used"].(float64) > 3000 {
			t.Errorf("a plain job's usage was charged: %v", m)
		}
	}
}

// With pause_queues, a hold on a budget's total pauses the job's queue:
// its pending jobs count as held by the budget, not as ready.
func TestBudgetJobsPauseQueue(t *testing.T) {
	t.Parallel()
	h := newHarness(t, budgetJobsConfig+"  pause_queues: true\n", true)
	for range 3 {
		h.do("POST", "/v1/jobs", "", `{"queue":"q","kind":"k"}`)
	}
	h.do("POST", "/v1/budgets/llm/close", "", `{"retry_after_ms": 60000}`)
	l := h.do("POST", "/v1/worker/lease", "", `{"queues":["q"],"worker_id":"w","max":1}`)
	if n := len(l.body["leases"].([]any)); n != 0 {
		t.Fatalf("leased %d jobs from a closed budget: %s", n, l.raw)
	}
	if l := h.do("POST", "/v1/worker/lease", "", `{"queues":["q"],"worker_id":"w","max":3}`); len(l.body["leases"].([]any)) != 0 {
		t.Fatalf("leased from a queue its budget paused: %s", l.raw)
	}
	metrics := h.do("GET", "/metrics", "", "").raw
	for _, want := range []string{`sluice_jobs_held{budget="llm",queue="q"} 3`, `sluice_jobs_ready{queue="q"} 0`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
