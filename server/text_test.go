package server

import (
	"strings"
	"testing"
)

// textStores are the job stores the text tests run on: SQLite and
// miniredis always, Redis and Postgres when configured.
var textStores = idStores[:4]

// leaseOne enqueues a job into q with extra fields and leases it.
func leaseOne(t *testing.T, h *harness, q, extra string) (id, token string) {
	t.Helper()
	r := h.do("POST", "/v1/jobs", "", `{"queue":`+jsonString(q)+`,"kind":"k"`+extra+`}`)
	if r.status != 201 {
		t.Fatalf("enqueue into %q = %d %s", q, r.status, r.raw)
	}
	id = jobID(r)
	r = h.do("POST", "/v1/worker/lease", "", `{"queues":[`+jsonString(q)+`],"worker_id":"w","lease_ms":60000}`)
	leases, _ := r.body["leases"].([]any)
	if r.status != 200 || len(leases) != 1 {
		t.Fatalf("lease from %q = %d %s; want its job", q, r.status, r.raw)
	}
	l := leases[0].(map[string]any)
	if got := l["job"].(map[string]any)["id"]; got != id {
		t.Fatalf("leased %v, want %s", got, id)
	}
	return id, l["token"].(string)
}

// A worker's error holding NUL, an unpaired surrogate and a stray byte
// (subprocess output) ends the attempt on every store: the job fails as
// its attempts say, and the error is stored with U+FFFD in their place,
// the same everywhere. On Postgres it answered 503 forever: the lease ran
// out, the job was rescued and ran again, max_attempts ignored.
func TestFailErrorWithNULOnEveryStore(t *testing.T) {
	const (
		sent = `exit status 1: \u0000\u0001 binary \udc80 ` + "\xff" + ` end`
		want = "exit status 1: \uFFFD\x01 binary \uFFFD \uFFFD end"
	)
	for _, s := range textStores {
		t.Run(s.name, func(t *testing.T) {
			h := storeHarness(t, s.cfg(t))
			id, tok := leaseOne(t, h, "nul", `,"max_attempts":1`)
			r := h.do("POST", "/v1/worker/jobs/"+id+"/fail", "", `{"token":"`+tok+`","error":"`+sent+`"}`)
			if r.status != 200 || r.body["state"] != "failed" {
				t.Fatalf("fail = %d %s, want 200 failed", r.status, r.raw)
			}
			g := h.do("GET", "/v1/jobs/"+id, "", "")
			errs, _ := g.body["errors"].([]any)
			if g.body["state"] != "failed" || g.body["last_error"] != want || len(errs) != 1 {
				t.Fatalf("job = %s\nwant failed with last_error %q and one error", g.raw, want)
			}
			if got := errs[0].(map[string]any)["error"]; got != want {
				t.Errorf("errors[0].error = %q, want %q", got, want)
			}
			if a := g.body["attempt"]; a != 1.0 {
				t.Errorf("attempt = %v, want 1: the job must not run again", a)
			}
		})
	}
}

// Identifiers holding NUL are refused with a 400 naming the field, on
// every store, and change nothing; a token that cannot exist leaves the
// lease to its holder. On Postgres each answered 503 with Retry-After.
func TestNULIdentifiersOnEveryStore(t *testing.T) {
	for _, s := range textStores {
		t.Run(s.name, func(t *testing.T) {
			h := storeHarness(t, s.cfg(t))
			id, tok := leaseOne(t, h, "ids", "")
			cases := []struct{ method, path, body, field string }{
				{"POST", "/v1/jobs", `{"queue":"q","kind":"k","unique_key":"a\u0000b"}`, "unique_key"},
				{"POST", "/v1/worker/lease", `{"queues":["q"],"worker_id":"w\u0000"}`, "worker_id"},
				{"POST", "/v1/worker/lease", `{"queues":["q","a\u0000b"],"worker_id":"w"}`, "queues[1]"},
				{"POST", "/v1/worker/jobs/" + id + "/heartbeat", `{"token":"` + tok + `\u0000"}`, "token"},
				{"POST", "/v1/worker/jobs/" + id + "/complete", `{"token":"` + tok + `\u0000"}`, "token"},
				{"GET", "/v1/flows/a%00b", "", "flow"},
				{"GET", "/v1/schedules/a%00b", "", "name"},
				{"GET", "/v1/events?queue=a%00b", "", "queue"},
			}
			for _, c := range cases {
				r := h.do(c.method, c.path, "", c.body)
				d, _ := r.body["detail"].(string)
				if r.status != 400 || !strings.HasPrefix(d, c.field+" ") || !strings.Contains(d, "NUL") {
					t.Errorf("%s %s %s\n got %d %s\nwant 400 naming %s and NUL", c.method, c.path, c.body, r.status, r.raw, c.field)
				}
				if r.header.Get("Retry-After") != "" {
					t.Errorf("%s %s: Retry-After %q on a refusal", c.method, c.path, r.header.Get("Retry-After"))
				}
			}
			if r := h.do("POST", "/v1/worker/jobs/"+id+"/complete", "", `{"token":"`+tok+`"}`); r.status != 200 {
				t.Fatalf("complete with the real token = %d %s", r.status, r.raw)
			}
			if r := h.do("GET", "/v1/jobs?queue=q", "", ""); len(r.body["jobs"].([]any)) != 0 {
				t.Errorf("jobs in q after the refusals: %s, want none", r.raw)
			}
		})
	}
}

// Field names match exactly, at every depth: encoding/json alone took
// {"Queue":…} for queue. A surrogate pair is a character and is taken.
func TestStrictFieldNames(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, true)
	cases := []struct{ path, body, detail string }{
		{"/v1/jobs", `{"Queue":"q","kind":"k"}`, `unknown field "Queue": field names are case-sensitive (fields: `},
		{"/v1/jobs/batch", `{"jobs":[{"queue":"q","kind":"k"},{"queue":"q","KIND":"k"}]}`, `unknown field "jobs[1].KIND": field names are case-sensitive`},
		{"/v1/flows", `{"nodes":[{"name":"a","job":{"queue":"q","kind":"k","Tenant":"t"}}]}`, `unknown field "nodes[0].job.Tenant": field names are case-sensitive`},
		{"/v1/jobs", `{"queue":"q","kind":"k","webhook":{"URL":"https://203.0.113.7/h"}}`, `unknown field "webhook.URL": field names are case-sensitive`},
		{"/v1/jobs", `{"queue":"q","kind":"k","unique_key":"a\udfffb"}`, `unique_key must not contain an unpaired surrogate (\udfff): it is not a character`},
		{"/v1/jobs", `{"queue":"q","kind":"k","unique_key":"a\ud83d"}`, `unique_key must not contain an unpaired surrogate (\ud83d): it is not a character`},
		{"/v1/jobs", "{\"queue\":\"q\",\"kind\":\"k\",\"payload\":{\"a\":\"\xff\"}}", `payload.a must be valid UTF-8`},
	}
	for _, c := range cases {
		r := h.do("POST", c.path, "", c.body)
		if d, _ := r.body["detail"].(string); r.status != 400 || !strings.HasPrefix(d, c.detail) {
			t.Errorf("POST %s %s\n got %d %s\nwant 400 %q", c.path, c.body, r.status, r.raw, c.detail)
		}
	}
	r := h.do("POST", "/v1/jobs", "", `{"queue":"q\ud83d\ude00","kind":"k","payload":{"s":"\ud800 kept as JSON"}}`)
	if r.status != 201 || r.body["job"].(map[string]any)["queue"] != "q😀" {
		t.Fatalf("a surrogate pair: %d %s, want 201 in queue q😀", r.status, r.raw)
	}
	if r := h.do("GET", "/v1/jobs", "", ""); len(r.body["jobs"].([]any)) != 1 {
		t.Errorf("jobs after the refusals: %s, want the one taken", r.raw)
	}
}
