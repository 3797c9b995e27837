package server

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// respCheck validates answers against the response schemas of the served
// document, so a field the document lists as required (and the generated
// TypeScript types declare as always there) is one the server sends.
type respCheck struct {
	t   *testing.T
	h   *harness
	doc *openapi3.T
}

func newRespCheck(t *testing.T, h *harness) *respCheck {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	return &respCheck{t: t, h: h, doc: doc}
}

// call sends the request (route is the documented path template, with a
// query if any; args fill its parameters in order), wants the status, validates the body
// against that status's documented schema and returns the reply.
func (c *respCheck) call(method, route string, status int, body string, args ...any) reply {
	c.t.Helper()
	path := route
	for _, a := range args {
		i, j := strings.Index(path, "{"), strings.Index(path, "}")
		path = path[:i] + fmt.Sprint(a) + path[j+1:]
	}
	r := c.h.do(method, path, "", body)
	if r.status != status {
		c.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, status, r.raw)
	}
	route, _, _ = strings.Cut(route, "?")
	item := c.doc.Paths.Value(route)
	if item == nil || item.GetOperation(method) == nil {
		c.t.Fatalf("%s %s is not documented", method, route)
	}
	resp := item.GetOperation(method).Responses.Value(strconv.Itoa(status))
	if resp == nil || resp.Value == nil {
		c.t.Fatalf("%s %s: status %d is not documented", method, route, status)
	}
	var media *openapi3.MediaType
	for _, ct := range []string{"application/json", "application/problem+json"} {
		if media = resp.Value.Content.Get(ct); media != nil {
			break
		}
	}
	if media == nil || media.Schema == nil {
		c.t.Fatalf("%s %s %d: no JSON schema documented", method, route, status)
	}
	var v any
	if err := json.Unmarshal([]byte(r.raw), &v); err != nil {
		c.t.Fatalf("%s %s: %v: %s", method, path, err, r.raw)
	}
	if err := media.Schema.Value.VisitJSON(v, openapi3.MultiErrors()); err != nil {
		c.t.Errorf("%s %s %d: the answer does not match its schema: %v\n%s", method, route, status, err, r.raw)
	}
	return r
}

// The answers of the job, worker, group, flow and limit routes match their
// documented schemas, required fields included, through a job's whole life.
func TestOpenAPIResponsesMatchSchemas(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, true)
	c := newRespCheck(t, h)

	c.call("POST", "/v1/limits/{scene}/{policy}", 200, `{"subject":{"member":"1"}}`, "member", "export-usage")
	c.call("POST", "/v1/limits/{scene}/{policy}", 429, `{"subject":{"member":"1"}}`, "member", "export-usage")
	c.call("POST", "/v1/limits/{scene}/{policy}/peek", 200, `{"subject":{"member":"1"}}`, "member", "export-usage")

	c.call("POST", "/v1/groups", 201, `{"id":"g1"}`)
	first := c.call("POST", "/v1/jobs", 201, `{"queue":"q","kind":"k","unique_key":"u","group":"g1"}`)
	id := first.body["job"].(map[string]any)["id"]
	c.call("POST", "/v1/jobs", 200, `{"queue":"q","kind":"k","unique_key":"u","group":"g1"}`)
	c.call("POST", "/v1/jobs/batch", 201, `{"jobs":[{"queue":"q","kind":"k"},{"queue":"q","kind":"k","payload":"x"}]}`)
	c.call("GET", "/v1/jobs/{id}", 200, "", id)
	c.call("GET", "/v1/jobs", 200, "")
	c.call("GET", "/v1/jobs?queue=none", 200, "")
	c.call("GET", "/v1/queues/stats", 200, "")
	c.call("POST", "/v1/queues/{queue}/pause", 200, `{"duration_ms":60000}`, "other")
	c.call("POST", "/v1/queues/{queue}/resume", 200, "", "other")

	c.call("POST", "/v1/worker/lease", 200, `{"queues":["none"],"worker_id":"w"}`)
	leases := c.call("POST", "/v1/worker/lease", 200, `{"queues":["q"],"worker_id":"w","max":3}`)
	ls := leases.body["leases"].([]any)
	if len(ls) != 3 {
		t.Fatalf("leased %d jobs, want 3", len(ls))
	}
	lease := func(i int) (any, string) {
		l := ls[i].(map[string]any)
		return l["job"].(map[string]any)["id"], fmt.Sprintf(`{"token":%q}`, l["token"])
	}
	jid, tok := lease(0)
	c.call("POST", "/v1/worker/jobs/{id}/heartbeat", 200, tok, jid)
	c.call("POST", "/v1/worker/jobs/{id}/complete", 200, tok, jid)
	jid, tok = lease(1)
	c.call("POST", "/v1/worker/jobs/{id}/fail", 200, strings.TrimSuffix(tok, "}")+`,"error":"boom","permanent":true}`, jid)
	c.call("POST", "/v1/jobs/{id}/retry", 200, "", jid)
	jid, tok = lease(2)
	c.call("POST", "/v1/worker/jobs/{id}/requeue", 200, tok, jid)
	c.call("POST", "/v1/jobs/{id}/cancel", 200, "", jid)

	c.call("GET", "/v1/groups/{group}", 200, "", "g1")
	c.call("POST", "/v1/groups/{group}/cancel", 200, "", "g1")

	flow := c.call("POST", "/v1/flows", 201, `{"nodes":[{"name":"a","job":{"queue":"f","kind":"k"}},{"name":"b","job":{"queue":"f","kind":"k"}}],"edges":[{"parent":"a","child":"b"}]}`)
	c.call("GET", "/v1/flows/{flow}", 200, "", flow.body["id"])
	jobs := flow.body["jobs"].([]any)
	c.call("GET", "/v1/jobs/{id}", 200, "", jobs[1].(map[string]any)["id"]) // with its parents
	c.call("GET", "/v1/jobs/{id}", 200, "", jobs[0].(map[string]any)["id"]) // with its children
	c.call("POST", "/v1/flows/{flow}/cancel", 200, "", flow.body["id"])
}
