package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
	"github.com/sluicehq/sluice/server"
)

// dropper serves the API and cuts the first event stream after its first
// event; it holds the next one back until let is closed, so events are
// recorded while the client is away.
type dropper struct {
	api    http.Handler
	opened chan struct{} // closed when the first stream is open
	let    chan struct{}
	mu     sync.Mutex
	n      int
	resume []string // Last-Event-ID of each stream request
}

// firstEventCut stops the handler's request once an event has been
// written and flushed.
type firstEventCut struct {
	http.ResponseWriter
	cancel context.CancelFunc
	seen   bool
}

func (w *firstEventCut) Write(p []byte) (int, error) {
	w.seen = w.seen || strings.Contains(string(p), "\nevent: ")
	return w.ResponseWriter.Write(p)
}

func (w *firstEventCut) Flush() {
	w.ResponseWriter.(http.Flusher).Flush()
	if w.seen {
		w.cancel()
	}
}

func (w *firstEventCut) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (d *dropper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/events" {
		d.api.ServeHTTP(w, r)
		return
	}
	d.mu.Lock()
	d.n++
	n := d.n
	d.resume = append(d.resume, r.Header.Get("Last-Event-ID"))
	d.mu.Unlock()
	if n == 1 {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		// The subscription exists once the handler writes its headers.
		cut := &firstEventCut{ResponseWriter: &openSignal{ResponseWriter: w, opened: d.opened}, cancel: cancel}
		d.api.ServeHTTP(cut, r.WithContext(ctx))
		return
	}
	<-d.let
	d.api.ServeHTTP(w, r)
}

// openSignal closes opened at the response's first flush.
type openSignal struct {
	http.ResponseWriter
	opened chan struct{}
	once   sync.Once
}

func (o *openSignal) Flush() {
	o.ResponseWriter.(http.Flusher).Flush()
	o.once.Do(func() { close(o.opened) })
}

func (o *openSignal) Unwrap() http.ResponseWriter { return o.ResponseWriter }

func (d *dropper) resumes() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.resume...)
}

// newEventsServer is newInProcess with the event log on, behind d.
func newEventsServer(t *testing.T, d *dropper) *inProcess {
	t.Helper()
	b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlitequeue.Options{Events: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	limits := memlimit.New(memlimit.Options{})
	t.Cleanup(func() { limits.Close() })
	srv, err := server.New(server.Options{Limits: limits, Queue: b, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	d.api = srv.Handler()
	hs := httptest.NewServer(d)
	t.Cleanup(hs.Close)
	return &inProcess{t: t, url: hs.URL}
}

// `sluice events` follows the stream; when the connection drops it
// resumes from the last event it printed (Last-Event-ID), so events
// recorded while it was away are printed once, in order.
func TestEventsResumesAfterDrop(t *testing.T) {
	t.Parallel()
	d := &dropper{opened: make(chan struct{}), let: make(chan struct{})}
	s := newEventsServer(t, d)
	r := s.cli("events", "--queue", "crawl", "--type", "job.enqueued", "--json", "--max", "3")
	select {
	case <-d.opened:
	case <-time.After(30 * time.Second):
		t.Fatal("the stream did not open")
	}
	ids := []string{s.enqueue(`{"queue":"crawl","kind":"page"}`)}
	s.enqueue(`{"queue":"other","kind":"page"}`) // filtered out
	testutil.Eventually(t, "the first stream to be cut", func() error {
		if len(d.resumes()) < 2 {
			return fmt.Errorf("%d stream requests", len(d.resumes()))
		}
		return nil
	})
	ids = append(ids, s.enqueue(`{"queue":"crawl","kind":"page"}`), s.enqueue(`{"queue":"crawl","kind":"page"}`))
	close(d.let)
	if code := r.exited(t); code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", code, r.stdout, r.stderr)
	}
	var got []string
	var first string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout.String()), "\n") {
		var e struct {
			ID    string `json:"id"`
			JobID string `json:"job_id"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if first == "" {
			first = e.ID
		}
		got = append(got, e.JobID)
	}
	if strings.Join(got, ",") != strings.Join(ids, ",") {
		t.Errorf("printed the events of jobs %v, want %v once each, in order", got, ids)
	}
	if res := d.resumes(); len(res) != 2 || res[0] != "" || res[1] != first {
		t.Errorf("stream requests' Last-Event-ID = %q, want none then %q", res, first)
	}
	if !strings.Contains(r.stderr.String(), "reconnecting") {
		t.Errorf("standard error does not say it reconnects:\n%s", r.stderr)
	}
}

// Without --json each event is one line of key=value fields, a progress
// report as its percent and data.
func TestEventsLines(t *testing.T) {
	t.Parallel()
	cases := []struct{ data, want string }{
		{`{"id":"7","type":"job.enqueued","created_at":"2030-01-02T03:04:05Z","job_id":"1","queue":"crawl","kind":"page","tenant":"acme"}`,
			"2030-01-02T03:04:05Z job.enqueued job=1 queue=crawl kind=page tenant=acme id=7"},
		{`{"id":"8","type":"job.progress","created_at":"2030-01-02T03:04:05Z","job_id":"1","queue":"crawl","data":{"percent":42,"data":{"pages":7}}}`,
			`2030-01-02T03:04:05Z job.progress job=1 queue=crawl progress="42% {\"pages\":7}" id=8`},
		{`{"id":"9","type":"job.failed","created_at":"2030-01-02T03:04:05Z","job_id":"1","state":"failed","attempt":3,"error":"boom"}`,
			"2030-01-02T03:04:05Z job.failed job=1 state=failed attempt=3 error=boom id=9"},
		{`{"id":"10","type":"group.completed","created_at":"2030-01-02T03:04:05Z","group":"g","data":{"completed":2}}`,
			`2030-01-02T03:04:05Z group.completed group=g data="{\"completed\":2}" id=10`},
		{`not json`, `not json`},
	}
	for _, c := range cases {
		if got := eventLine(c.data); got != c.want {
			t.Errorf("eventLine(%s)\n got %s\nwant %s", c.data, got, c.want)
		}
	}
}

// A refused stream (a bad filter) ends the command with the server's
// message instead of reconnecting forever.
func TestEventsRefusal(t *testing.T) {
	t.Parallel()
	d := &dropper{opened: make(chan struct{}), let: make(chan struct{})}
	close(d.let)
	s := newEventsServer(t, d)
	d.n = 1 // no cut: every stream is served as is
	r := s.cli("events", "--type", "job.exploded")
	if code := r.exited(t); code != 1 || !strings.Contains(r.stderr.String(), "job.exploded") {
		t.Fatalf("exit %d, want 1 with the server's message:\n%s", code, r.stderr)
	}
}
