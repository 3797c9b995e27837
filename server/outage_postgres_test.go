package server

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/server/config"
)

// During a Postgres outage every job call fails with 503, and the log
// says so a bounded number of times: the first fault, then at most one
// line per faultLogEvery, saying how many were left out.
func TestPostgresOutageLogIsBounded(t *testing.T) {
	pg := pgtest.StartServer(t) // a private server this test may stop
	cfg := config.Default()
	cfg.Server.Listen = "127.0.0.1:0"
	cfg.Storage.PostgresURL = pg.URL()
	cfg.Storage.DataDir = t.TempDir()
	logs := &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	addr, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- Run(ctx, RunOptions{Config: cfg, Logger: slog.New(slog.NewJSONHandler(logs, nil)), Listening: func(h, _ string) { addr <- h }})
	}()
	t.Cleanup(func() { cancel(); <-done })
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	r := outageCall(t, base, "POST", "/v1/jobs", `{"queue":"q","kind":"k"}`)
	if r.status != 201 {
		t.Fatalf("enqueue before the outage: %d %s", r.status, r.raw)
	}
	id := r.body["job"].(map[string]any)["id"].(string)
	pg.Stop(pgtest.Immediate)
	began := time.Now()
	const n = 150
	for i := range n {
		method, path, body := "POST", "/v1/jobs", `{"queue":"q","kind":"k"}`
		if i%2 == 1 {
			method, path, body = "GET", "/v1/jobs/"+id, ""
		}
		if r := outageCall(t, base, method, path, body); r.status != 503 {
			t.Fatalf("%s %s during the outage: %d %s, want 503", method, path, r.status, r.raw)
		}
	}
	elapsed := time.Since(began)
	lines := strings.Count(logs.String(), `"msg":"server: job store fault"`)
	// One line at the first fault, then one per faultLogEvery at most.
	most := 1 + int(elapsed/faultLogEvery) + 1
	if lines == 0 || lines > most {
		t.Fatalf("%d requests failing over %s logged %d store-fault lines, want 1 to %d:\n%s", n, elapsed, lines, most, logs)
	}
	if most < n/2 && lines > 1 && !strings.Contains(logs.String(), "similar_lines_left_out") {
		t.Errorf("the later lines do not say how many were left out:\n%s", logs)
	}
	pg.Start()
}
