package server

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/queue/sqlitequeue"
	"github.com/sluicehq/sluice/server/config"
)

const scheduleDoc = `schedules:
  - name: from-file
    cron: "0 3 * * *"
    time_zone: Europe/Berlin
    job: {queue: reports, kind: report, payload: {period: day}}
`

func TestScheduleRoutes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, scheduleDoc, true)
	if err := h.srv.syncSchedules(context.Background(), h.srv.Config()); err != nil {
		t.Fatal(err)
	}
	put := func(name, body string) reply { return h.do("PUT", "/v1/schedules/"+name, "", body) }
	r := put("nightly", `{"cron":"30 2 * * *","time_zone":"America/New_York","overlap":"skip","job":{"queue":"reports","kind":"report","payload":{"n":1}}}`)
	if r.status != 200 || r.body["name"] != "nightly" || r.body["source"] != "api" || r.body["overlap"] != "skip" {
		t.Fatalf("PUT = %d %s", r.status, r.raw)
	}
	if next, _ := r.body["next"].([]any); len(next) != 5 {
		t.Errorf("next = %v, want 5 ticks", r.body["next"])
	}
	cases := []struct {
		name, body string
		status     int
		detail     string
	}{
		{"bad cron", `{"cron":"* * *","job":{"queue":"q","kind":"k"}}`, 400, "cron must be 5 fields"},
		{"both", `{"cron":"@daily","every_ms":60000,"job":{"queue":"q","kind":"k"}}`, 400, "cron must not be set together with every_ms: set exactly one of cron and every_ms"},
		{"neither", `{"job":{"queue":"q","kind":"k"}}`, 400, "cron is missing: set exactly one of cron and every_ms"},
		{"@every below the minimum", `{"cron":"@every 1ms","job":{"queue":"q","kind":"k"}}`, 400, "cron \"@every D\": D must be between 1s and 100 years, got 1ms"},
		{"@every zero", `{"cron":"@every 0s","job":{"queue":"q","kind":"k"}}`, 400, "cron \"@every D\": D must be between 1s"},
		{"@every negative", `{"cron":"@every -1s","job":{"queue":"q","kind":"k"}}`, 400, "cron \"@every D\": D must be between 1s"},
		{"never runs", `{"cron":"0 0 30 2 *","job":{"queue":"q","kind":"k"}}`, 400, "cron never matches a date"},
		{"every_ms below the minimum", `{"every_ms":999,"job":{"queue":"q","kind":"k"}}`, 400, "every_ms must be between 1s"},
		{"short every", `{"every_ms":10,"job":{"queue":"q","kind":"k"}}`, 400, "every_ms must be between 1s"},
		{"zone", `{"cron":"@daily","time_zone":"Nowhere/Land","job":{"queue":"q","kind":"k"}}`, 400, "time_zone must be an IANA"},
		{"job field", `{"cron":"@daily","job":{"queue":"q"}}`, 400, "job.kind must not be empty"},
		{"unique key", `{"cron":"@daily","job":{"queue":"q","kind":"k","unique_key":"u"}}`, 400, "job.unique_key must be empty"},
		{"policy", `{"cron":"@daily","overlap":"never","job":{"queue":"q","kind":"k"}}`, 400, "overlap must be"},
	}
	for _, c := range cases {
		r := put("bad", c.body)
		if r.status != c.status || !strings.HasPrefix(r.body["detail"].(string), c.detail) {
			t.Errorf("%s: %d %v; want %d %q...", c.name, r.status, r.body["detail"], c.status, c.detail)
		}
	}
	r = h.do("GET", "/v1/schedules", "", "")
	list, _ := r.body["schedules"].([]any)
	if r.status != 200 || len(list) != 2 || list[0].(map[string]any)["name"] != "from-file" || list[0].(map[string]any)["source"] != "config" {
		t.Fatalf("GET list = %d %s", r.status, r.raw)
	}
	owned := []struct{ method, path, body string }{
		{"PUT", "/v1/schedules/from-file", `{"every_ms":60000,"job":{"queue":"q","kind":"k"}}`},
		{"DELETE", "/v1/schedules/from-file", ""},
	}
	for _, c := range owned {
		if r := h.do(c.method, c.path, "", c.body); r.status != 409 || !strings.Contains(r.raw, "config file") {
			t.Errorf("%s %s = %d %s; want 409 naming the config file", c.method, c.path, r.status, r.raw)
		}
	}
	if r := h.do("POST", "/v1/schedules/from-file/pause", "", ""); r.status != 200 || r.body["paused"] != true {
		t.Errorf("pause = %d %s", r.status, r.raw)
	}
	if r := h.do("POST", "/v1/schedules/from-file/resume", "", ""); r.status != 200 || r.body["paused"] != false {
		t.Errorf("resume = %d %s", r.status, r.raw)
	}
	r = h.do("POST", "/v1/schedules/nightly/trigger", "", "")
	job, _ := r.body["job"].(map[string]any)
	if r.status != 201 || job["kind"] != "report" {
		t.Fatalf("trigger = %d %s", r.status, r.raw)
	}
	r = h.do("GET", "/v1/schedules/nightly", "", "")
	last, _ := r.body["last_run"].(map[string]any)
	if last["job_id"] != job["id"] || last["state"] != "pending" {
		t.Errorf("last_run = %v, want the triggered job, pending", r.body["last_run"])
	}
	if r := h.do("DELETE", "/v1/schedules/nightly", "", ""); r.status != 204 {
		t.Errorf("DELETE = %d %s", r.status, r.raw)
	}
	for _, m := range []string{"GET", "DELETE"} {
		if r := h.do(m, "/v1/schedules/nightly", "", ""); r.status != 404 || !strings.Contains(r.raw, `unknown schedule \"nightly\"`) {
			t.Errorf("%s after delete = %d %s", m, r.status, r.raw)
		}
	}
}

// The config's schedules follow the file: a reload adds, changes and
// removes them.
func TestScheduleReload(t *testing.T) {
	t.Parallel()
	h := newHarness(t, scheduleDoc, true)
	ctx := context.Background()
	if err := h.srv.syncSchedules(ctx, h.srv.Config()); err != nil {
		t.Fatal(err)
	}
	next, err := config.Parse([]byte(`schedules:
  - name: added
    every: 15m
    job: {queue: q, kind: k}
`), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.srv.onConfigChange(next); err != nil {
		t.Fatal(err)
	}
	r := h.do("GET", "/v1/schedules", "", "")
	list, _ := r.body["schedules"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["name"] != "added" || list[0].(map[string]any)["every_ms"] != float64(900000) {
		t.Fatalf("after reload: %s; want only the added schedule", r.raw)
	}
}

// A job store without schedules answers 501 naming it.
func TestSchedulesUnsupported(t *testing.T) {
	t.Parallel()
	h := newHarnessOn(t, testConfig, plainBackend{openQueue(t, sqlitequeue.Options{})})
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/schedules", ""},
		{"GET", "/v1/schedules/x", ""},
		{"PUT", "/v1/schedules/x", `{"cron":"@daily","job":{"queue":"q","kind":"k"}}`},
		{"POST", "/v1/schedules/x/trigger", ""},
	} {
		r := h.do(c.method, c.path, "", c.body)
		if r.status != 501 || r.body["detail"] != "the job store (plain) does not keep schedules: run them on SQLite, Postgres or Redis" {
			t.Errorf("%s %s = %d %s; want 501", c.method, c.path, r.status, r.raw)
		}
	}
}
