package server

import (
	"context"
	"fmt"
	"testing"
)

func TestTenantsThroughTheAPI(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, true)
	r := h.do("GET", "/v1/tenants/acme", "", "")
	if r.status != 200 || r.body["effective"].(map[string]any)["limit"] != -1.0 {
		t.Fatalf("new tenant: %d %s", r.status, r.raw)
	}
	if r := h.do("PUT", "/v1/tenants/acme/limit", "", `{"concurrency":1}`); r.status != 200 || r.body["own"].(map[string]any)["limit"] != 1.0 {
		t.Fatalf("set limit: %d %s", r.status, r.raw)
	}
	// Two jobs, limit 1: one is leased, the other waits for the slot.
	for range 2 {
		h.do("POST", "/v1/jobs", "", `{"queue":"q","kind":"k","tenant":"acme"}`)
	}
	l := h.do("POST", "/v1/worker/lease", "", `{"queues":["q"],"worker_id":"w","max":5}`)
	if n := len(l.body["leases"].([]any)); n != 1 {
		t.Fatalf("leased %d jobs of a tenant limited to 1: %s", n, l.raw)
	}
	jobs := h.do("GET", "/v1/tenants/acme", "", "").body["jobs"].(map[string]any)
	if jobs["active"] != 1.0 || jobs["waiting"].(float64)+jobs["pending"].(float64) != 1 {
		t.Errorf("tenant jobs = %v", jobs)
	}
	// Raising the limit releases the waiting job at once.
	if r := h.do("PUT", "/v1/tenants/acme", "", `{"limit":2,"weight":3}`); r.status != 200 || r.body["own"].(map[string]any)["weight"] != 3.0 {
		t.Fatalf("set tenant: %d %s", r.status, r.raw)
	}
	if l := h.do("POST", "/v1/worker/lease", "", `{"queues":["q"],"worker_id":"w","max":5}`); len(l.body["leases"].([]any)) != 1 {
		t.Fatalf("after raising the limit: %s", l.raw)
	}
}

func TestGroupsThroughTheAPI(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, true)
	r := h.do("POST", "/v1/groups", "", `{"id":"crawl-1","max_concurrency":2,"completion_kind":"report","completion_queue":"reports"}`)
	if r.status != 201 || r.body["id"] != "crawl-1" || r.body["max_concurrency"] != 2.0 {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	if r := h.do("POST", "/v1/groups", "", `{"id":"crawl-1"}`); r.status != 409 {
		t.Fatalf("duplicate: %d %s", r.status, r.raw)
	}
	for i := range 3 {
		h.do("POST", "/v1/jobs", "", fmt.Sprintf(`{"queue":"pages","kind":"scrape","group":"crawl-1","payload":%d}`, i))
	}
	// At most 2 of the group's jobs run at once.
	l := h.do("POST", "/v1/worker/lease", "", `{"queues":["pages"],"worker_id":"w","max":10}`)
	leases := l.body["leases"].([]any)
	if len(leases) != 2 {
		t.Fatalf("leased %d jobs of a group limited to 2", len(leases))
	}
	for _, x := range leases {
		x := x.(map[string]any)
		id := x["job"].(map[string]any)["id"].(string)
		h.do("POST", "/v1/worker/jobs/"+id+"/complete", "", `{"token":"`+x["token"].(string)+`"}`)
	}
	g := h.do("GET", "/v1/groups/crawl-1", "", "")
	if g.status != 200 || g.body["jobs"].(map[string]any)["completed"] != 2.0 || g.body["total"] != 3.0 || g.body["done"] == true {
		t.Fatalf("progress: %d %s", g.status, g.raw)
	}
	// Cancelling the group cancels the last job; the group is then done
	// and its completion job is enqueued once.
	c := h.do("POST", "/v1/groups/crawl-1/cancel", "", "")
	if c.status != 200 || c.body["cancel_requested"] != true || c.body["jobs"].(map[string]any)["cancelled"] != 1.0 {
		t.Fatalf("cancel: %d %s", c.status, c.raw)
	}
	g = h.do("GET", "/v1/groups/crawl-1", "", "")
	if g.body["done"] != true || g.body["completion_job_id"] == nil {
		t.Fatalf("done: %s", g.raw)
	}
	report := h.do("GET", "/v1/jobs/"+g.body["completion_job_id"].(string), "", "")
	if report.body["kind"] != "report" || report.body["queue"] != "reports" {
		t.Errorf("completion job: %s", report.raw)
	}
}

func TestConfigTenantsAppliedAtStart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig+`
queues:
  tenants:
    default: {concurrency: 4}
    overrides:
      big: {concurrency: 40, weight: 2}
`, true)
	if err := h.srv.applyTenants(context.Background(), h.srv.Config().Queues.Tenants); err != nil {
		t.Fatal(err)
	}
	eff := h.do("GET", "/v1/tenants/small", "", "").body["effective"].(map[string]any)
	if eff["limit"] != 4.0 {
		t.Errorf("default tenant effective = %v", eff)
	}
	eff = h.do("GET", "/v1/tenants/big", "", "").body["effective"].(map[string]any)
	if eff["limit"] != 40.0 || eff["weight"] != 2.0 {
		t.Errorf("override effective = %v", eff)
	}
}
