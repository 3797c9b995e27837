package server

import (
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/queue/mux"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
	"github.com/sluicehq/sluice/server/config"
)

// TestBatchStoredInPart checks the answer to a batch over two backends of
// which the second is down: 503 with the positions and ids the first one
// stored, so a client resends only the rest.
func TestBatchStoredInPart(t *testing.T) {
	t.Parallel()
	open := func() *sqlitequeue.Backend {
		b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlitequeue.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	def, down := open(), open()
	down.Close()
	m, err := mux.New(def, mux.Route{Name: "side", Backend: down, Queues: []string{"side"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(testConfig), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	mem := memlimit.New(memlimit.Options{SweepInterval: -1})
	t.Cleanup(func() { mem.Close() })
	srv, err := New(Options{Config: cfg, Limits: mem, Queue: m, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	h := &harness{t: t, srv: srv, http: hs}

	r := h.do("POST", "/v1/jobs/batch", "", `{"jobs":[{"queue":"main","kind":"a"},{"queue":"side","kind":"b"},{"queue":"main","kind":"c"}]}`)
	if r.status != 503 || r.header.Get("Retry-After") == "" {
		t.Fatalf("status %d, Retry-After %q; want 503 with Retry-After: %s", r.status, r.header.Get("Retry-After"), r.raw)
	}
	stored, _ := r.body["stored"].([]any)
	var got []float64
	for _, s := range stored {
		e := s.(map[string]any)
		got = append(got, e["index"].(float64))
		id, _ := e["id"].(string)
		if g := h.do("GET", "/v1/jobs/"+id, "", ""); g.status != 200 {
			t.Errorf("GET stored job %q = %d, want 200", id, g.status)
		}
	}
	if len(got) != 2 || got[0] != 0 || got[1] != 2 {
		t.Errorf("stored indexes = %v, want [0 2]: %s", got, r.raw)
	}
}
