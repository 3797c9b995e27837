package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/sluicehq/sluice/server/config"
)

// badText is one text no API string may hold as it is: in a body as the
// raw JSON of the string, in a URL as its percent-encoding.
type badText struct{ name, json, url string }

var badTexts = []badText{
	{"NUL", `"a\u0000b"`, "a%00b"},
	{"invalid UTF-8", "\"a\xffb\"", "a%FFb"},
	{"lone surrogate", `"a\ud800b"`, "a%ED%A0%80b"}, // UTF-8 has no surrogates
}

// textWriteBodies are valid bodies, one for each route of the OpenAPI
// document that takes one, holding every string field of its schema
// (textCoverage checks they do). {job} is a job's id.
var textWriteBodies = map[string]string{
	"POST /v1/limits/{scene}/{policy}":            `{"subject":{"member":"m"},"cost":0,"lease_id":"l"}`,
	"POST /v1/limits/{scene}/{policy}/peek":       `{"subject":{"member":"m"},"lease_id":"l"}`,
	"POST /v1/limits/{scene}/{policy}/acquire":    `{"subject":{"member":"m"},"lease_id":"l"}`,
	"POST /v1/limits/{scene}/{policy}/release":    `{"subject":{"member":"m"},"lease_id":"l"}`,
	"POST /v1/limits/{scene}/{policy}/inspect":    `{"subject":{"member":"m"},"lease_id":"l"}`,
	"POST /v1/limits/{scene}/{policy}/reset":      `{"subject":{"member":"m"},"lease_id":"l"}`,
	"PUT /v1/limit-overrides/{scene}/{policy}":    `{"subject":{"member":"m"},"limits":[{"quota":5,"window":"60s","algorithm":"fixed-window"}]}`,
	"DELETE /v1/limit-overrides/{scene}/{policy}": `{"subject":{"member":"m"}}`,
	"POST /v1/jobs":                           textJob,
	"POST /v1/jobs/batch":                     `{"jobs":[` + textJob + `]}`,
	"POST /v1/queues/{queue}/pause":           `{"duration_ms":1000}`,
	"POST /v1/worker/lease":                   `{"queues":["other"],"worker_id":"w"}`,
	"POST /v1/worker/jobs/{id}/heartbeat":     `{"token":"t"}`,
	"POST /v1/worker/jobs/{id}/complete":      `{"token":"t","result":{"a":"b"}}`,
	"POST /v1/worker/jobs/{id}/fail":          `{"token":"t","error":"e"}`,
	"POST /v1/worker/jobs/{id}/requeue":       `{"token":"t"}`,
	"POST /v1/worker/jobs/{id}/progress":      `{"token":"t","percent":5,"data":{"a":"b"}}`,
	"PUT /v1/tenants/{tenant}":                `{"limit":2}`,
	"PUT /v1/tenants/{tenant}/limit":          `{"concurrency":2}`,
	"PUT /v1/tenants/{tenant}/webhook-secret": `{"secret":"0123456789abcdef0123456789abcdef"}`,
	"POST /v1/tenants/{tenant}/backoff":       `{"duration_ms":1000}`,
	"POST /v1/groups": `{"id":"g2","tenant":"t","completion_kind":"k","completion_queue":"q",` +
		`"webhook":{"url":"https://203.0.113.7/h","events":["group.completed"],"headers":{"X-A":"b"}}}`,
	"POST /v1/groups/{group}/backoff": `{"duration_ms":1000}`,
	"POST /v1/budgets/{budget}/close": `{"until":"2030-01-02T03:04:05Z"}`,
	"PUT /v1/schedules/{name}": `{"cron":"@hourly","time_zone":"UTC","overlap":"allow","missed":"once",` +
		`"job":{"queue":"q","kind":"k","tenant":"t","group":"g","on_parent_failure":"run","payload":{"a":"b"},` +
		`"webhook":{"url":"https://203.0.113.7/h","events":["job.completed"],"headers":{"X-A":"b"}}}}`,
	"POST /v1/flows": `{"name":"f","nodes":[{"name":"a","job":{"queue":"q","kind":"k"}},{"name":"b","job":` + textJob + `}],` +
		`"edges":[{"parent":"a","child":"b"}]}`,
}

// textJob is a job spec with every string field set.
const textJob = `{"queue":"q","kind":"k","tenant":"t","group":"g","run_at":"2030-01-02T03:04:05Z","unique_key":"u",` +
	`"on_parent_failure":"run","depends_on":["{dep}"],"payload":{"a":"b"},` +
	`"webhook":{"url":"https://203.0.113.7/h","events":["job.completed"],"headers":{"X-A":"b"}}}`

// textNotInBody are string fields of a route's schema that its body may
// not set, by the route's own rule: the body cannot carry them.
var textNotInBody = map[string]string{
	"PUT /v1/schedules/{name} job.unique_key":    "the scheduler sets it",
	"PUT /v1/schedules/{name} job.depends_on[0]": "a schedule's jobs have no parents",
	"PUT /v1/schedules/{name} job.run_at":        "each run starts at its tick",
}

// textFreeFields take any text (made storable, not refused).
var textFreeFields = map[string]bool{"POST /v1/worker/jobs/{id}/fail error": true}

// textBaseQuery is the query a route's valid request needs.
var textBaseQuery = map[string]string{"GET /v1/queues/counts": "?by=queue"}

// textPathValues are valid values of the path parameters.
var textPathValues = map[string]string{
	"scene": "member", "policy": "chat", "queue": "q", "tenant": "t", "group": "g", "name": "s",
	"flow": "f", "subscription": "sub", "file": "app.js", "budget": "b",
}

const textTestConfig = `
limits:
  scenes:
    member:
      subject: [member]
      policies:
        chat: {limits: [{quota: 3, window: 1s}], in_flight: {max: 2, ttl: 30s}}
`

// Every string of every route, in a body, a path or a query, refuses NUL,
// invalid UTF-8 and an unpaired surrogate with a 400 naming it, on every
// store, and changes nothing stored. The routes, their parameters and
// their bodies' string fields come from the OpenAPI document.
func TestTextFieldsOfEveryRoute(t *testing.T) {
	doc := loadOpenAPI(t)
	for _, s := range textStores {
		t.Run(s.name, func(t *testing.T) {
			cfg := s.cfg(t)
			limits, err := config.Parse([]byte(textTestConfig), "test.yaml")
			if err != nil {
				t.Fatal(err)
			}
			cfg.Limits = limits.Limits
			cfg.Webhooks.AllowNetworks = append(cfg.Webhooks.AllowNetworks, "203.0.113.0/24")
			h := storeHarness(t, cfg)
			pendingID := jobID(h.do("POST", "/v1/jobs", "", `{"queue":"keep","kind":"k"}`))
			bodies := map[string]string{}
			for k, b := range textWriteBodies {
				bodies[k] = strings.ReplaceAll(b, "{dep}", pendingID)
			}
			leasedID, tok := leaseOne(t, h, "held", "")
			values := map[string]string{"id": leasedID}
			for k, v := range textPathValues {
				values[k] = v
			}
			routes := doc.routes(t, bodies)
			for _, rt := range routes { // the valid requests first: they may store things
				rt.checkBase(t, h, values)
			}
			before := textSnapshot(h)
			for _, rt := range routes {
				rt.checkBad(t, h, values)
			}
			if after := textSnapshot(h); after != before {
				t.Errorf("stored state changed by refused requests:\nbefore %s\n after %s", before, after)
			}
			if r := h.do("GET", "/v1/jobs/"+pendingID, "", ""); r.status != 200 || r.body["queue"] != "keep" {
				t.Errorf("job %s after the refusals: %d %s", pendingID, r.status, r.raw)
			}
			if r := h.do("POST", "/v1/worker/jobs/"+leasedID+"/complete", "", `{"token":"`+tok+`"}`); r.status != 200 {
				t.Errorf("complete of the held job after the refusals: %d %s, want 200", r.status, r.raw)
			}
		})
	}
}

// textSnapshot lists what the refused requests must not change.
func textSnapshot(h *harness) string {
	var b strings.Builder
	for _, p := range []string{"/v1/jobs?limit=1000", "/v1/schedules", "/v1/tenants", "/v1/limit-overrides", "/v1/queues/stats"} {
		r := h.do("GET", p, "", "")
		var v any
		_ = json.Unmarshal([]byte(r.raw), &v)
		fmt.Fprintf(&b, "%s %d %s\n", p, r.status, stripTimes(v))
	}
	return b.String()
}

// stripTimes writes v without the fields that change as time passes.
func stripTimes(v any) string {
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k := range x {
				if strings.HasSuffix(k, "_at") || strings.HasSuffix(k, "_until") || k == "next" || k == "age_ms" ||
					strings.Contains(k, "oldest") || k == "remaining" || k == "reset_ms" {
					delete(x, k)
				} else {
					x[k] = walk(x[k])
				}
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		}
		return v
	}
	out, _ := json.Marshal(walk(v))
	return string(out)
}

// openAPIDoc is the parts of the OpenAPI document the test reads.
type openAPIDoc struct {
	Paths      map[string]map[string]openAPIOp `yaml:"paths"`
	Components struct {
		Schemas    map[string]openAPISchema `yaml:"schemas"`
		Parameters map[string]openAPIParam  `yaml:"parameters"`
	} `yaml:"components"`
}

type openAPIOp struct {
	Parameters  []openAPIParam `yaml:"parameters"`
	RequestBody *struct {
		Content map[string]struct {
			Schema openAPISchema `yaml:"schema"`
		} `yaml:"content"`
	} `yaml:"requestBody"`
}

type openAPIParam struct {
	Ref  string `yaml:"$ref"`
	Name string `yaml:"name"`
	In   string `yaml:"in"`
}

type openAPISchema struct {
	Ref        string                   `yaml:"$ref"`
	Type       string                   `yaml:"type"`
	ReadOnly   bool                     `yaml:"readOnly"`
	Properties map[string]openAPISchema `yaml:"properties"`
	Items      *openAPISchema           `yaml:"items"`
}

func loadOpenAPI(t *testing.T) *openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	if err := yaml.Unmarshal(openAPIYAML, &doc); err != nil {
		t.Fatal(err)
	}
	return &doc
}

// textRoute is one route of the document with what the test sends it.
type textRoute struct {
	method, path string
	pathParams   []string
	query        []string
	body         string // "" when the route takes none
}

func (rt textRoute) key() string { return rt.method + " " + rt.path }

// routes lists the document's routes, with a body for each that takes
// one, and checks that each body holds every string of its schema.
func (d *openAPIDoc) routes(t *testing.T, bodies map[string]string) []textRoute {
	var out []textRoute
	for path, ops := range d.Paths {
		for method, op := range ops {
			rt := textRoute{method: strings.ToUpper(method), path: path, pathParams: pathParams(path)}
			for _, p := range op.Parameters {
				if p.Ref != "" {
					p = d.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
				}
				if p.In == "query" {
					rt.query = append(rt.query, p.Name)
				}
			}
			if op.RequestBody != nil {
				body, ok := bodies[rt.key()]
				if !ok {
					t.Errorf("%s takes a body: add a valid one to textWriteBodies", rt.key())
					continue
				}
				rt.body = body
				d.checkCoverage(t, rt, op.RequestBody.Content["application/json"].Schema)
			}
			out = append(out, rt)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out
}

var firstItems = regexp.MustCompile(`\[\d+\]`)

// checkCoverage fails when the route's schema has a string field its
// body does not set (arrays are covered by their first item).
func (d *openAPIDoc) checkCoverage(t *testing.T, rt textRoute, s openAPISchema) {
	have := map[string]bool{}
	for _, l := range stringLeaves(t, rt.body) {
		have[firstItems.ReplaceAllString(l.name, "[0]")] = true
	}
	for _, f := range d.stringFields(s, "", 0) {
		if !have[f] && textNotInBody[rt.key()+" "+f] == "" {
			t.Errorf("%s: the body in textWriteBodies does not set the string field %s", rt.key(), f)
		}
	}
}

func (d *openAPIDoc) stringFields(s openAPISchema, path string, depth int) []string {
	if s.Ref != "" {
		s = d.Components.Schemas[strings.TrimPrefix(s.Ref, "#/components/schemas/")]
	}
	switch {
	case depth > 8 || s.ReadOnly:
		return nil
	case s.Type == "string":
		return []string{path}
	case s.Items != nil:
		return d.stringFields(*s.Items, path+"[0]", depth+1)
	}
	var out []string
	for name, p := range s.Properties {
		out = append(out, d.stringFields(p, joinPath(path, name), depth+1)...)
	}
	return out
}

// textLeaf is a string in a JSON body: its API name and where it is.
type textLeaf struct {
	name string
	at   []any // keys and indexes from the root
}

// stringLeaves lists the strings of body that the API reads as strings
// (not those in payload, result, data or metadata, which it keeps as
// JSON).
func stringLeaves(t *testing.T, body string) []textLeaf {
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	var out []textLeaf
	var walk func(v any, name string, at []any)
	walk = func(v any, name string, at []any) {
		switch x := v.(type) {
		case string:
			out = append(out, textLeaf{name: name, at: append([]any(nil), at...)})
		case []any:
			for i, e := range x {
				walk(e, fmt.Sprintf("%s[%d]", name, i), append(at, i))
			}
		case map[string]any:
			for k, e := range x {
				switch k {
				case "payload", "result", "data", "metadata", "completion_payload":
					continue
				}
				walk(e, joinPath(name, k), append(at, k))
			}
		}
	}
	walk(v, "", nil)
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// withBad returns body with the string at l replaced by the raw JSON bad.
func withBad(t *testing.T, body string, l textLeaf, bad string) string {
	var v any
	_ = json.Unmarshal([]byte(body), &v)
	cur := v
	for i, step := range l.at {
		last := i == len(l.at)-1
		switch k := step.(type) {
		case string:
			if last {
				cur.(map[string]any)[k] = "@@BAD@@"
			} else {
				cur = cur.(map[string]any)[k]
			}
		case int:
			if last {
				cur.([]any)[k] = "@@BAD@@"
			} else {
				cur = cur.([]any)[k]
			}
		}
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(bytes.Replace(out, []byte(`"@@BAD@@"`), []byte(bad), 1))
}

func (rt textRoute) url(values map[string]string, badParam, bad string) string {
	path := rt.path
	for _, p := range rt.pathParams {
		v := url.PathEscape(values[p])
		if p == badParam {
			v = bad
		}
		path = strings.Replace(path, "{"+p+"}", v, 1)
	}
	return path
}

// checkBase sends the route's valid request: never a 400 (so a 400 for
// a bad text is for that text) and never a 5xx.
func (rt textRoute) checkBase(t *testing.T, h *harness, values map[string]string) {
	t.Helper()
	if rt.key() == "GET /v1/events" {
		return // a stream: it answers only once the client leaves
	}
	r := h.do(rt.method, rt.url(values, "", "")+textBaseQuery[rt.key()], "", rt.body)
	if r.status == 400 || r.status >= 500 {
		t.Errorf("%s, valid: %d %s; want neither 400 nor 5xx", rt.key(), r.status, r.raw)
	}
}

func (rt textRoute) checkBad(t *testing.T, h *harness, values map[string]string) {
	t.Helper()
	for _, bad := range badTexts {
		for _, p := range rt.pathParams {
			r := h.do(rt.method, rt.url(values, p, bad.url), "", rt.body)
			rt.want(t, r, p+" (in the path)", bad.name, 400)
		}
		for _, q := range rt.query {
			r := h.do(rt.method, rt.url(values, "", "")+"?"+q+"="+bad.url, "", rt.body)
			rt.want(t, r, q+" (in the query)", bad.name, 400)
		}
		if rt.body == "" {
			continue
		}
		for _, l := range stringLeaves(t, rt.body) {
			r := h.do(rt.method, rt.url(values, "", ""), "", withBad(t, rt.body, l, bad.json))
			if textFreeFields[rt.key()+" "+l.name] {
				if r.status == 400 || r.status >= 500 {
					t.Errorf("%s, %s in free text %s: %d %s; want it taken", rt.key(), bad.name, l.name, r.status, r.raw)
				}
				continue
			}
			rt.want(t, r, l.name, bad.name, 400)
		}
	}
}

// want checks a refusal: the status, a detail that starts with the
// field's name, and no Retry-After.
func (rt textRoute) want(t *testing.T, r reply, field, what string, status int) {
	t.Helper()
	d, _ := r.body["detail"].(string)
	if r.status != status || !strings.HasPrefix(d, field+" ") || r.header.Get("Retry-After") != "" {
		t.Errorf("%s with %s in %s: %d %s; want %d naming %s", rt.key(), what, field, r.status, r.raw, status, field)
	}
}
