package server

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

const crawlFlow = `{"name":"site","nodes":[
	{"name":"crawl","job":{"queue":"web","kind":"crawl","payload":{"url":"https://example.com"}}},
	{"name":"extract","job":{"queue":"web","kind":"extract"}},
	{"name":"summarise","job":{"queue":"web","kind":"summarise"}}],
	"edges":[{"parent":"crawl","child":"extract"},{"parent":"extract","child":"summarise"}]}`

// leaseDone leases the one ready job of queue web, checks its kind and
// completes it with result.
func (h *harness) leaseDone(kind, result string) map[string]any {
	h.t.Helper()
	r := h.do("POST", "/v1/worker/lease", "", `{"queues":["web"],"worker_id":"w","max":5}`)
	leases, _ := r.body["leases"].([]any)
	if r.status != 200 || len(leases) != 1 {
		h.t.Fatalf("lease: %d %s", r.status, r.raw)
	}
	l := leases[0].(map[string]any)
	job := l["job"].(map[string]any)
	if job["kind"] != kind {
		h.t.Fatalf("leased %v, want %s", job["kind"], kind)
	}
	c := h.do("POST", "/v1/worker/jobs/"+job["id"].(string)+"/complete", "", `{"token":"`+l["token"].(string)+`","result":`+result+`}`)
	if c.status != 200 {
		h.t.Fatalf("complete: %d %s", c.status, c.raw)
	}
	return job
}

func TestFlowsOverHTTP(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, true)
	r := h.do("POST", "/v1/flows", "", crawlFlow)
	if r.status != 201 {
		t.Fatalf("POST /v1/flows: %d %s", r.status, r.raw)
	}
	id := r.body["id"].(string)
	counts := r.body["counts"].(map[string]any)
	if counts["pending"] != 1.0 || counts["blocked"] != 2.0 || len(r.body["edges"].([]any)) != 2 {
		t.Fatalf("new flow = %s, want 1 pending, 2 blocked, 2 edges", r.raw)
	}
	h.leaseDone("crawl", `{"pages":3}`)
	extract := h.leaseDone("extract", `"text"`)
	parents, _ := extract["parents"].([]any)
	if len(parents) != 1 || !strings.Contains(r.raw, "crawl") {
		t.Fatalf("leased extract parents = %v, want crawl with its result", extract["parents"])
	}
	if res := parents[0].(map[string]any)["result"].(map[string]any); res["pages"] != 3.0 {
		t.Fatalf("parent result = %v, want {pages: 3}", res)
	}
	g := h.do("GET", "/v1/jobs/"+extract["id"].(string), "", "")
	if len(g.body["parents"].([]any)) != 1 || len(g.body["children"].([]any)) != 1 || g.body["flow"] != id {
		t.Fatalf("GET job = %s, want one parent, one child, the flow", g.raw)
	}
	f := h.do("GET", "/v1/flows/"+id, "", "")
	if f.status != 200 || f.body["counts"].(map[string]any)["pending"] != 1.0 {
		t.Fatalf("GET flow = %d %s", f.status, f.raw)
	}
	c := h.do("POST", "/v1/flows/"+id+"/cancel", "", "")
	if c.status != 200 || c.body["counts"].(map[string]any)["cancelled"] != 1.0 {
		t.Fatalf("cancel flow = %d %s", c.status, c.raw)
	}
	if nf := h.do("GET", "/v1/flows/nope", "", ""); nf.status != 404 {
		t.Fatalf("unknown flow: %d %s", nf.status, nf.raw)
	}
	// depends_on on a single job.
	d := h.do("POST", "/v1/jobs", "", `{"queue":"web","kind":"late","depends_on":["`+extract["id"].(string)+`"]}`)
	if d.status != 201 || d.body["job"].(map[string]any)["state"] != "pending" {
		t.Fatalf("depends_on a completed job: %d %s", d.status, d.raw)
	}
}

func TestFlowsBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, true)
	cases := []struct {
		name, body, field string
	}{
		{"cycle", `{"nodes":[{"name":"a","job":{"queue":"q","kind":"k"}},{"name":"b","job":{"queue":"q","kind":"k"}}],
			"edges":[{"parent":"a","child":"b"},{"parent":"b","child":"a"}]}`, ".child makes a cycle"},
		{"unknown node", `{"nodes":[{"name":"a","job":{"queue":"q","kind":"k"}}],"edges":[{"parent":"x","child":"a"}]}`, "edges[0].parent names no node"},
		{"bad job", `{"nodes":[{"name":"a","job":{"queue":"q"}}]}`, "nodes[0].job.kind"},
		{"bad delay", `{"nodes":[{"name":"a","job":{"queue":"q","kind":"k","delay_ms":-1}}]}`, "nodes[0].job.delay_ms"},
		{"no nodes", `{"nodes":[]}`, "nodes must hold"},
		{"unknown parent id", `{"nodes":[{"name":"a","job":{"queue":"q","kind":"k","depends_on":["12345"]}}]}`, "depends_on"},
		{"bad policy", `{"nodes":[{"name":"a","job":{"queue":"q","kind":"k","on_parent_failure":"maybe"}}]}`, "nodes[0].job.on_parent_failure"},
	}
	for _, c := range cases {
		r := h.do("POST", "/v1/flows", "", c.body)
		if r.status != 400 || !strings.Contains(r.raw, c.field) {
			t.Errorf("%s: %d %s; want 400 naming %q", c.name, r.status, r.raw, c.field)
		}
	}
	if r := h.do("POST", "/v1/jobs", "", `{"queue":"q","kind":"k","depends_on":["999"]}`); r.status != 400 || !strings.Contains(r.raw, "depends_on") {
		t.Errorf("unknown depends_on: %d %s", r.status, r.raw)
	}
	if r := h.do("GET", "/v1/jobs?queue=q", "", ""); len(r.body["jobs"].([]any)) != 0 {
		t.Fatalf("after refused flows: %s; want nothing stored", r.raw)
	}
}

// A store without flows (the RabbitMQ lane, or one that does not declare
// them) answers 501 naming what is missing.
func TestFlowsUnsupported(t *testing.T) {
	t.Parallel()
	b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "q.db"), sqlitequeue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	h := newHarnessOn(t, testConfig, plainBackend{b})
	if r := h.do("POST", "/v1/flows", "", crawlFlow); r.status != 501 || !strings.Contains(r.raw, "job flows") {
		t.Fatalf("POST /v1/flows on a store without flows: %d %s", r.status, r.raw)
	}
	r := h.do("POST", "/v1/jobs", "", `{"queue":"q","kind":"k","depends_on":["1"]}`)
	if r.status != 501 || !strings.Contains(r.raw, "depends_on") {
		t.Fatalf("depends_on on a store without flows: %d %s", r.status, r.raw)
	}
}

// TestRetryChildOfFailedParent: retrying a flow's child cancelled by its
// failed parent is a 409 that names the parent and says to retry it; the
// child stays cancelled, and retrying the parent puts it back.
func TestRetryChildOfFailedParent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, true)
	root := h.failJob("q")
	r := h.do("POST", "/v1/jobs", "", `{"queue":"c","kind":"child","depends_on":["`+root+`"]}`)
	if r.status != 201 {
		t.Fatalf("enqueue child: %d %s", r.status, r.raw)
	}
	child := jobID(r)
	r = h.do("POST", "/v1/jobs/"+child+"/retry", "", "")
	detail, _ := r.body["detail"].(string)
	if r.status != 409 || !strings.Contains(detail, "parent job "+root+" is failed") || !strings.Contains(detail, "retry job "+root+" instead") {
		t.Fatalf("retry child of a failed parent: %d %s; want 409 naming the parent and the way out", r.status, r.raw)
	}
	if g := h.do("GET", "/v1/jobs/"+child, "", ""); g.body["state"] != "cancelled" {
		t.Fatalf("refused retry changed the child: %s", g.raw)
	}
	if r := h.do("POST", "/v1/jobs/"+root+"/retry", "", ""); r.status != 200 {
		t.Fatalf("retry parent: %d %s", r.status, r.raw)
	}
	if g := h.do("GET", "/v1/jobs/"+child, "", ""); g.body["state"] != "blocked" {
		t.Fatalf("child after its parent's retry: %s; want blocked", g.raw)
	}
}
