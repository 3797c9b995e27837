package server

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
	"github.com/sluicehq/sluice/server/config"
)

// newWatchHarness is a harness whose SQLite job store keeps the event log,
// as `sluice serve` opens it by default.
func newWatchHarness(t *testing.T) *harness {
	t.Helper()
	b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlitequeue.Options{Events: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	store := memlimit.New(memlimit.Options{SweepInterval: -1})
	t.Cleanup(func() { store.Close() })
	srv, err := New(Options{Config: config.Default(), Limits: store, Queue: b, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &harness{t: t, srv: srv, http: hs}
}

// enqueueLease enqueues one job on queue q and leases it: its id and token.
func (h *harness) enqueueLease(q string) (string, string) {
	h.t.Helper()
	r := h.do("POST", "/v1/jobs", "", `{"queue":"`+q+`","kind":"crawl"}`)
	if r.status != 201 {
		h.t.Fatalf("enqueue: %d %s", r.status, r.raw)
	}
	r = h.do("POST", "/v1/worker/lease", "", `{"queues":["`+q+`"],"worker_id":"w1"}`)
	leases, _ := r.body["leases"].([]any)
	if r.status != 200 || len(leases) != 1 {
		h.t.Fatalf("lease: %d %s", r.status, r.raw)
	}
	l := leases[0].(map[string]any)
	return l["job"].(map[string]any)["id"].(string), l["token"].(string)
}

func TestProgressThroughWorkerProtocol(t *testing.T) {
	t.Parallel()
	h := newWatchHarness(t)
	id, tok := h.enqueueLease("crawl")
	path := "/v1/worker/jobs/" + id + "/progress"
	if r := h.do("POST", path, "", `{"token":"`+tok+`","percent":42,"data":{"pages":7}}`); r.status != 200 {
		t.Fatalf("progress: %d %s", r.status, r.raw)
	}
	r := h.do("GET", "/v1/jobs/"+id, "", "")
	p, _ := r.body["progress"].(map[string]any)
	if p == nil || p["percent"] != 42.0 || p["data"].(map[string]any)["pages"] != 7.0 || p["updated_at"] == nil {
		t.Fatalf("GET job progress = %v (%s), want percent 42, data.pages 7, updated_at", p, r.raw)
	}
	bad := []struct{ body, field string }{
		{`{"token":"` + tok + `","percent":101}`, "percent"},
		{`{"token":"` + tok + `","data":[1,2]}`, "data"},
		{`{"token":"` + tok + `","data":{"x":"` + strings.Repeat("a", queue.MaxProgressBytes) + `"}}`, "data"},
		{`{"token":"` + tok + `"}`, "percent"},
	}
	for _, c := range bad {
		if r := h.do("POST", path, "", c.body); r.status != 400 || !strings.Contains(r.raw, c.field) {
			t.Errorf("progress %.60s: %d %s, want 400 naming %s", c.body, r.status, r.raw, c.field)
		}
	}
	// A stale worker: the job was given back and leased by another.
	if r := h.do("POST", "/v1/worker/jobs/"+id+"/requeue", "", `{"token":"`+tok+`"}`); r.status != 200 {
		t.Fatalf("requeue: %d %s", r.status, r.raw)
	}
	if r := h.do("POST", "/v1/worker/lease", "", `{"queues":["crawl"],"worker_id":"w2"}`); r.status != 200 {
		t.Fatalf("lease again: %d %s", r.status, r.raw)
	}
	if r := h.do("POST", path, "", `{"token":"`+tok+`","percent":99}`); r.status != 409 {
		t.Fatalf("stale worker's progress: %d %s, want 409", r.status, r.raw)
	}
}

func TestGetJobWaits(t *testing.T) {
	t.Parallel()
	h := newWatchHarness(t)
	id, tok := h.enqueueLease("crawl")
	done := make(chan reply, 1)
	go func() { done <- h.do("GET", "/v1/jobs/"+id+"?wait=30s", "", "") }()
	// The long-poll is under way once the watcher follows the job.
	testutil.Eventually(t, "the waiter is registered", func() bool { return h.srv.jobs.Watching().Waiters == 1 })
	if r := h.do("POST", "/v1/worker/jobs/"+id+"/complete", "", `{"token":"`+tok+`","result":{"ok":true}}`); r.status != 200 {
		t.Fatalf("complete: %d %s", r.status, r.raw)
	}
	r := <-done
	if r.status != 200 || r.body["state"] != "completed" {
		t.Fatalf("GET ?wait: %d %s, want the completed job", r.status, r.raw)
	}
	// Not final: the wait ends with the job as it is.
	r = h.do("POST", "/v1/jobs", "", `{"queue":"later","kind":"k"}`)
	pending := jobID(r)
	if r := h.do("GET", "/v1/jobs/"+pending+"?wait=50ms", "", ""); r.status != 200 || r.body["state"] != "pending" {
		t.Fatalf("GET ?wait=50ms: %d %s, want the pending job", r.status, r.raw)
	}
	for _, bad := range []string{"61s", "-1s", "soon"} {
		if r := h.do("GET", "/v1/jobs/"+pending+"?wait="+bad, "", ""); r.status != 400 || !strings.Contains(r.raw, "wait") {
			t.Errorf("wait=%s: %d %s, want 400 naming wait", bad, r.status, r.raw)
		}
	}
}

// sseEvent is one event read from a stream.
type sseEvent struct{ id, typ, data string }

// sseStream reads events from GET /v1/events.
type sseStream struct {
	resp *http.Response
	sc   *bufio.Scanner
}

func (h *harness) events(ctx context.Context, query, lastID string) *sseStream {
	h.t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", h.http.URL+"/v1/events"+query, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := h.http.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		h.t.Fatalf("GET /v1/events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return &sseStream{resp: resp, sc: bufio.NewScanner(resp.Body)}
}

// next reads the next event (comments and retry lines are skipped).
func (s *sseStream) next(t *testing.T) sseEvent {
	t.Helper()
	var e sseEvent
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "" && e.typ != "":
			return e
		case strings.HasPrefix(line, "id: "):
			e.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			e.typ = line[7:]
		case strings.HasPrefix(line, "data: "):
			e.data = line[6:]
		}
	}
	t.Fatalf("stream ended: %v", s.sc.Err())
	return e
}

func (s *sseStream) close() { s.resp.Body.Close() }

// TestEventsResume: a client that disconnects and reconnects with
// Last-Event-ID receives every event it missed, in order, and nothing
// twice.
func TestEventsResume(t *testing.T) {
	t.Parallel()
	h := newWatchHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := h.events(ctx, "?queue=crawl", "")
	testutil.Eventually(t, "the stream is subscribed", func() bool { return h.srv.jobs.Watching().Subscribers == 1 })
	id, tok := h.enqueueLease("crawl")
	h.do("POST", "/v1/jobs", "", `{"queue":"other","kind":"k"}`) // filtered out
	first := s.next(t)
	if first.typ != "job.enqueued" {
		t.Fatalf("first event = %+v, want job.enqueued", first)
	}
	var ev queue.Event
	if err := json.Unmarshal([]byte(first.data), &ev); err != nil || ev.JobID != id || ev.ID != first.id || ev.Queue != "crawl" {
		t.Fatalf("first event data = %s (%v), want job %s on crawl with id %s", first.data, err, id, first.id)
	}
	s.close()
	// Missed while away.
	h.do("POST", "/v1/worker/jobs/"+id+"/progress", "", `{"token":"`+tok+`","percent":50}`)
	h.do("POST", "/v1/worker/jobs/"+id+"/complete", "", `{"token":"`+tok+`"}`)
	s = h.events(ctx, "?queue=crawl", first.id)
	defer s.close()
	var got []string
	for _, want := range []string{"job.started", "job.progress", "job.completed"} {
		e := s.next(t)
		got = append(got, e.typ)
		if e.typ != want {
			t.Fatalf("after reconnecting: got %v, want job.started, job.progress, job.completed", got)
		}
	}
	// Then live events.
	h.do("POST", "/v1/jobs", "", `{"queue":"crawl","kind":"k"}`)
	if e := s.next(t); e.typ != "job.enqueued" {
		t.Fatalf("live event = %+v, want job.enqueued", e)
	}
	if r := h.do("GET", "/v1/events?type=job.bogus", "", ""); r.status != 400 || !strings.Contains(r.raw, "type") {
		t.Errorf("bad type filter: %d %s, want 400 naming type", r.status, r.raw)
	}
	if r := h.do("GET", "/v1/events?last_event_id=nope", "", ""); r.status != 400 || !strings.Contains(r.raw, "Last-Event-ID") {
		t.Errorf("bad Last-Event-ID: %d %s, want 400 naming Last-Event-ID", r.status, r.raw)
	}
}

// noProgress is a job store that records no progress and keeps no event
// log, as the RabbitMQ lane.
type noProgress struct{ *sqlitequeue.Backend }

func (n noProgress) Features() backend.Features {
	f := n.Backend.Features()
	f.Name, f.Progress, f.Events = "lane", nil, nil
	return f
}

// TestWatchingWithoutTheParts: progress is 501 on a store without it, the
// event stream too, and waits still work (by polling).
func TestWatchingWithoutTheParts(t *testing.T) {
	t.Parallel()
	b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlitequeue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	cfg, err := config.Parse([]byte(`
auth:
  tokens:
    - {name: w, token: worker-secret-0123456, roles: [worker]}
    - {name: p, token: producer-secret-012345, roles: [producer]}
`), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	store := memlimit.New(memlimit.Options{SweepInterval: -1})
	t.Cleanup(func() { store.Close() })
	srv, err := New(Options{Config: cfg, Limits: store, Queue: noProgress{b}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	h := &harness{t: t, srv: srv, http: hs}
	r := h.do("POST", "/v1/jobs", "producer-secret-012345", `{"queue":"q","kind":"k"}`)
	id := jobID(r)
	r = h.do("POST", "/v1/worker/lease", "worker-secret-0123456", `{"queues":["q"],"worker_id":"w"}`)
	tok := r.body["leases"].([]any)[0].(map[string]any)["token"].(string)
	if r := h.do("POST", "/v1/worker/jobs/"+id+"/progress", "worker-secret-0123456", `{"token":"`+tok+`","percent":5}`); r.status != 501 {
		t.Errorf("progress on a store without it: %d %s, want 501", r.status, r.raw)
	}
	if r := h.do("GET", "/v1/events", "producer-secret-012345", ""); r.status != 501 {
		t.Errorf("events on a store without a log: %d %s, want 501", r.status, r.raw)
	}
	if r := h.do("GET", "/v1/events", "worker-secret-0123456", ""); r.status != 403 {
		t.Errorf("events with a worker token: %d %s, want 403", r.status, r.raw)
	}
	done := make(chan reply, 1)
	go func() { done <- h.do("GET", "/v1/jobs/"+id+"?wait=30s", "producer-secret-012345", "") }()
	testutil.Eventually(t, "the waiter is registered", func() bool { return srv.jobs.Watching().Waiters == 1 })
	h.do("POST", "/v1/worker/jobs/"+id+"/complete", "worker-secret-0123456", `{"token":"`+tok+`"}`)
	if r := <-done; r.status != 200 || r.body["state"] != "completed" {
		t.Fatalf("GET ?wait by polling: %d %s, want the completed job", r.status, r.raw)
	}
}

// parityEvents checks queues.events by the stream's own answer: it is on,
// and says the retention and length it was configured with.
func parityEvents(t *testing.T, p *paritySetup) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", p.base+"/v1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Sluice-Events-Retention") != "7200" || resp.Header.Get("Sluice-Events-Max") != "5000" {
		t.Errorf("queues.events {retention: 2h, max_events: 5000}: %d, retention %q, max %q", resp.StatusCode,
			resp.Header.Get("Sluice-Events-Retention"), resp.Header.Get("Sluice-Events-Max"))
	}
}
