package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
	"github.com/sluicehq/sluice/server/config"
)

func TestJobsThroughWorkerProtocol(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, true)
	r := h.do("POST", "/v1/jobs", "", `{"queue":"mail","kind":"send","payload":{"to":"a@example.com"},"tenant":"acme"}`)
	if r.status != 201 {
		t.Fatalf("enqueue: %d %s", r.status, r.raw)
	}
	id := r.body["job"].(map[string]any)["id"].(string)
	var batch strings.Builder
	batch.WriteString(`{"jobs":[`)
	for i := range 5 {
		if i > 0 {
			batch.WriteString(",")
		}
		fmt.Fprintf(&batch, `{"queue":"mail","kind":"send","payload":%d}`, i)
	}
	batch.WriteString("]}")
	if r := h.do("POST", "/v1/jobs/batch", "", batch.String()); r.status != 201 || len(r.body["jobs"].([]any)) != 5 {
		t.Fatalf("batch: %d %s", r.status, r.raw)
	}

	// Unique: the second enqueue returns the first job.
	u := `{"queue":"mail","kind":"digest","unique_key":"daily"}`
	first := h.do("POST", "/v1/jobs", "", u)
	dup := h.do("POST", "/v1/jobs", "", u)
	if dup.status != 200 || dup.body["duplicate"] != true || jobID(dup) != jobID(first) {
		t.Fatalf("duplicate: %d %s", dup.status, dup.raw)
	}

	// Lease all 7, complete every one but fail one.
	r = h.do("POST", "/v1/worker/lease", "", `{"queues":["mail"],"worker_id":"w1","max":10}`)
	leases := r.body["leases"].([]any)
	if r.status != 200 || len(leases) != 7 {
		t.Fatalf("lease: %d %s", r.status, r.raw)
	}
	for _, l := range leases {
		l := l.(map[string]any)
		job := l["job"].(map[string]any)
		jid, tok := job["id"].(string), l["token"].(string)
		if hb := h.do("POST", "/v1/worker/jobs/"+jid+"/heartbeat", "", `{"token":"`+tok+`"}`); hb.status != 200 {
			t.Fatalf("heartbeat: %d %s", hb.status, hb.raw)
		}
		if job["kind"] == "digest" {
			f := h.do("POST", "/v1/worker/jobs/"+jid+"/fail", "", `{"token":"`+tok+`","error":"smtp down","permanent":true}`)
			if f.status != 200 || f.body["state"] != "failed" {
				t.Fatalf("fail: %d %s", f.status, f.raw)
			}
			continue
		}
		c := h.do("POST", "/v1/worker/jobs/"+jid+"/complete", "", `{"token":"`+tok+`","result":{"ok":true}}`)
		if c.status != 200 || c.body["state"] != "completed" {
			t.Fatalf("complete: %d %s", c.status, c.raw)
		}
		// A second completion with the same token is fenced off.
		if again := h.do("POST", "/v1/worker/jobs/"+jid+"/complete", "", `{"token":"`+tok+`"}`); again.status != 409 {
			t.Fatalf("second complete: %d %s", again.status, again.raw)
		}
	}
	g := h.do("GET", "/v1/jobs/"+id, "", "")
	if g.status != 200 || g.body["state"] != "completed" || g.body["result"].(map[string]any)["ok"] != true {
		t.Fatalf("get: %d %s", g.status, g.raw)
	}
	if g.body["payload"].(map[string]any)["to"] != "a@example.com" {
		t.Errorf("payload = %v", g.body["payload"])
	}
	s := h.do("GET", "/v1/queues/stats", "", "")
	counts := s.body["queues"].([]any)[0].(map[string]any)["counts"].(map[string]any)
	if counts["completed"] != 6.0 || counts["failed"] != 1.0 {
		t.Errorf("stats = %s", s.raw)
	}
	// Paging: 3 per page over the 7 jobs.
	seen := 0
	cursor := ""
	for page := 0; page < 5; page++ {
		l := h.do("GET", "/v1/jobs?queue=mail&limit=3&cursor="+cursor, "", "")
		seen += len(l.body["jobs"].([]any))
		next, _ := l.body["next"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if seen != 7 {
		t.Errorf("paged over %d jobs, want 7", seen)
	}
	if l := h.do("GET", "/v1/jobs?state=failed", "", ""); len(l.body["jobs"].([]any)) != 1 {
		t.Errorf("failed filter: %s", l.raw)
	}
	m := h.do("GET", "/metrics", "", "")
	for _, want := range []string{`sluice_jobs{queue="mail",state="completed"} 6`, `sluice_jobs_finished_total{queue="mail",state="completed",tenant="acme"} 1`} {
		if !strings.Contains(m.raw, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func jobID(r reply) string {
	j, _ := r.body["job"].(map[string]any)
	id, _ := j["id"].(string)
	return id
}

func TestCancelAndRequeue(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, true)
	a := jobID(h.do("POST", "/v1/jobs", "", `{"queue":"q","kind":"k"}`))
	if c := h.do("POST", "/v1/jobs/"+a+"/cancel", "", ""); c.status != 200 || c.body["state"] != "cancelled" {
		t.Fatalf("cancel: %d %s", c.status, c.raw)
	}
	b := jobID(h.do("POST", "/v1/jobs", "", `{"queue":"q","kind":"k"}`))
	l := h.do("POST", "/v1/worker/lease", "", `{"queues":["q"],"worker_id":"w"}`)
	tok := l.body["leases"].([]any)[0].(map[string]any)["token"].(string)
	if rq := h.do("POST", "/v1/worker/jobs/"+b+"/requeue", "", `{"token":"`+tok+`"}`); rq.status != 200 || rq.body["state"] != "pending" {
		t.Fatalf("requeue: %d %s", rq.status, rq.raw)
	}
	l = h.do("POST", "/v1/worker/lease", "", `{"queues":["q"],"worker_id":"w"}`)
	tok = l.body["leases"].([]any)[0].(map[string]any)["token"].(string)
	h.do("POST", "/v1/worker/jobs/"+b+"/complete", "", `{"token":"`+tok+`"}`)
	if c := h.do("POST", "/v1/jobs/"+b+"/cancel", "", ""); c.status != 409 {
		t.Fatalf("cancel finished: %d %s", c.status, c.raw)
	}
}

// A long-poll lease returns as soon as a job is enqueued.
func TestLeaseLongPoll(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, true)
	var wg sync.WaitGroup
	var got reply
	wg.Add(1)
	go func() {
		defer wg.Done()
		got = h.do("POST", "/v1/worker/lease", "", `{"queues":["slow"],"worker_id":"w","wait_ms":30000}`)
	}()
	h.do("POST", "/v1/jobs", "", `{"queue":"slow","kind":"k"}`)
	wg.Wait()
	if got.status != 200 || len(got.body["leases"].([]any)) != 1 {
		t.Fatalf("long poll: %d %s", got.status, got.raw)
	}
	// Nothing to lease and no wait: an empty list at once.
	if r := h.do("POST", "/v1/worker/lease", "", `{"queues":["slow"],"worker_id":"w"}`); len(r.body["leases"].([]any)) != 0 {
		t.Fatalf("empty lease: %s", r.raw)
	}
}

func TestNoQueueConfigured(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig, false)
	r := h.do("POST", "/v1/jobs", "", `{"queue":"q","kind":"k"}`)
	if r.status != 503 || r.body["detail"] != "job queue unavailable" || r.header.Get("Retry-After") == "" {
		t.Fatalf("%d %v %s", r.status, r.header, r.raw)
	}
}

// overloadedBackend refuses enqueues the way an admission check does: an
// error that says when to retry.
type overloadedBackend struct{ backend.Backend }

type overloadError struct{ after time.Duration }

func (e overloadError) Error() string             { return "queue: overloaded: queue mail is over its depth cap" }
func (e overloadError) RetryAfter() time.Duration { return e.after }

func (overloadedBackend) Enqueue(context.Context, []queue.JobSpec) ([]queue.Enqueued, error) {
	return nil, overloadError{after: 2500 * time.Millisecond}
}

func TestOverloadIs503WithRetryAfter(t *testing.T) {
	t.Parallel()
	b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlitequeue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cfg, err := config.Parse([]byte(testConfig), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	mem := memlimit.New(memlimit.Options{SweepInterval: -1})
	defer mem.Close()
	srv, err := New(Options{Config: cfg, Limits: mem, Queue: overloadedBackend{b}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	h := &harness{t: t, srv: srv, http: hs}
	r := h.do("POST", "/v1/jobs", "", `{"queue":"mail","kind":"k"}`)
	if r.status != 503 || r.header.Get("Retry-After") != "3" || r.body["detail"] != "overloaded: queue mail is over its depth cap" {
		t.Fatalf("%d %v %s", r.status, r.header, r.raw)
	}
}
