package server

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/server/config"
)

// With jobs on Postgres the server keeps the event log as it does on
// SQLite: GET /v1/events streams what happens to jobs.
func TestPostgresEvents(t *testing.T) {
	u := pgtest.URL(t)
	cfg := config.Default()
	cfg.Storage.DataDir = t.TempDir()
	cfg.Storage.PostgresURL = u
	cfg.Storage.Postgres = config.PostgresTuning{Schema: pgtest.Schema(t, u), MaxConns: 2}
	h := storeHarness(t, cfg)
	if h.srv.jobs.Backend().Features().Events == nil {
		t.Fatal("the Postgres job store keeps no event log")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := h.events(ctx, "?queue=crawl", "")
	defer s.close()
	testutil.Eventually(t, "the stream is subscribed", func() bool { return h.srv.jobs.Watching().Subscribers == 1 })
	id, tok := h.enqueueLease("crawl")
	h.do("POST", "/v1/worker/jobs/"+id+"/complete", "", `{"token":"`+tok+`"}`)
	for _, want := range []string{"job.enqueued", "job.started", "job.completed"} {
		if e := s.next(t); e.typ != want {
			t.Fatalf("event %+v, want %s", e, want)
		}
	}
}
