package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/amqptest"
	"github.com/sluicehq/sluice/internal/testutil"
)

// With SLUICE_AMQP_URL set: a config places queue scrape on the RabbitMQ
// lane and report on the embedded store; jobs enqueued to both in one
// batch run through the worker protocol and show completed in
// GET /v1/jobs/{id} and /v1/queues/stats.
func TestServeQueuesOnTwoBackends(t *testing.T) {
	u := amqptest.URL(t, "the end-to-end test of queues on the RabbitMQ lane")
	t.Parallel()
	dir := t.TempDir()
	prefix := amqptest.Prefix(t, u, "e2e", "scrape")
	writeFile(t, filepath.Join(dir, "sluice.yaml"), fmt.Sprintf(`
queues:
  backends:
    scrape: rabbitmq
    report: embedded
  rabbitmq:
    url: %q
    prefix: %q
    prefetch: 50
`, u, prefix))
	p := start(t, dir, nil)
	testutil.Eventually(t, "the log to say jobs on embedded+rabbitmq", func() bool {
		return strings.Contains(p.stderr.String(), "jobs on embedded+rabbitmq")
	})
	if a := p.do("GET", "/readyz", "", ""); a.status != 200 {
		t.Fatalf("readyz: %d %s", a.status, a.raw)
	}

	var b strings.Builder
	b.WriteString(`{"jobs":[`)
	for i := range 40 {
		if i > 0 {
			b.WriteByte(',')
		}
		q := []string{"scrape", "report"}[i%2]
		fmt.Fprintf(&b, `{"queue":%q,"kind":"work","payload":{"n":%d}}`, q, i)
	}
	b.WriteString("]}")
	a := p.do("POST", "/v1/jobs/batch", "", b.String())
	if a.status != 201 {
		t.Fatalf("enqueue: %d %s", a.status, a.raw)
	}
	byQueue := map[string][]string{}
	for _, j := range a.body["jobs"].([]any) {
		job := j.(map[string]any)["job"].(map[string]any)
		byQueue[job["queue"].(string)] = append(byQueue[job["queue"].(string)], job["id"].(string))
	}
	if !strings.HasPrefix(byQueue["scrape"][0], "rabbitmq.") || strings.Contains(byQueue["report"][0], ".") {
		t.Fatalf("ids: scrape %s, report %s; want a rabbitmq. id and an embedded one", byQueue["scrape"][0], byQueue["report"][0])
	}
	// A feature the lane lacks is refused for its queue only.
	if a := p.do("POST", "/v1/jobs", "", `{"queue":"scrape","kind":"k","unique_key":"u"}`); a.status != 501 || !strings.Contains(a.raw, "amqpqueue") {
		t.Errorf("unique job on the lane: %d %s, want 501 naming amqpqueue", a.status, a.raw)
	}
	if a := p.do("POST", "/v1/jobs", "", `{"queue":"report","kind":"k","unique_key":"u"}`); a.status != 201 {
		t.Errorf("unique job on the embedded store: %d %s", a.status, a.raw)
	}

	scrape := startCrew(p.url, "scrape", 3, 0)
	report := startCrew(p.url, "report", 2, 0)
	testutil.Eventually(t, "20 completions recorded on each queue", func() bool { return scrape.recorded() == 20 && report.recorded() >= 20 })
	scrape.stop()
	report.stop()
	scrape.exactlyOnce(t, byQueue["scrape"])
	report.exactlyOnce(t, byQueue["report"])
	for _, id := range []string{byQueue["scrape"][0], byQueue["report"][0]} {
		if a := p.do("GET", "/v1/jobs/"+id, "", ""); a.status != 200 || a.body["state"] != "completed" || a.body["result"] == nil {
			t.Errorf("job %s: %d %s", id, a.status, a.raw)
		}
	}
	if got := counts(t, p, "scrape")["completed"]; got != 20 {
		t.Errorf("scrape completed = %v, want 20", got)
	}
	if got := counts(t, p, "report")["completed"]; got != 21 {
		t.Errorf("report completed = %v, want 21", got)
	}
	if err := p.stop(); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.stderr)
	}
}
