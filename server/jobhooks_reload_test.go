package server

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/server/config"
)

// webhooks.allow_networks follows the file: a network allowed by a
// reload is allowed at enqueue and at delivery alike, without a restart.
func TestAllowNetworksReload(t *testing.T) {
	rc := &hookReceiver{}
	hs := httptest.NewServer(rc) // on 127.0.0.1: refused until allowed
	defer hs.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "sluice.yaml")
	doc := "storage:\n  data_dir: " + filepath.Join(dir, "data") + "\n"
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Server.Listen = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	addr, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- Run(ctx, RunOptions{Config: cfg, ConfigPath: path, Logger: slog.New(slog.DiscardHandler), Listening: func(h, _ string) { addr <- h }})
	}()
	t.Cleanup(func() { cancel(); <-done })
	base := "http://" + <-addr
	enqueue := func() (int, string) {
		body := `{"queue":"q","kind":"k","webhook":{"url":"` + hs.URL + `/done"}}`
		resp, err := http.Post(base+"/v1/jobs", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	if code, raw := enqueue(); code != 400 || !strings.Contains(raw, "webhooks.allow_networks") {
		t.Fatalf("before the reload: %d %s, want 400 naming webhooks.allow_networks", code, raw)
	}
	if err := os.WriteFile(path, []byte(doc+"webhooks:\n  allow_networks: [127.0.0.1/32]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the enqueue to be accepted after the reload", func() bool { c, _ := enqueue(); return c == 201 })
	var leased leasesBody
	call(t, "POST", base+"/v1/worker/lease", `{"queues":["q"],"worker_id":"w1"}`, &leased)
	if len(leased.Leases) != 1 {
		t.Fatalf("leased %d jobs, want 1", len(leased.Leases))
	}
	l := leased.Leases[0]
	call(t, "POST", base+"/v1/worker/jobs/"+l.Job.ID+"/complete", `{"token":"`+l.Token+`"}`, nil)
	testutil.Eventually(t, "the delivery to the newly allowed network", func() bool { return len(rc.all()) > 0 })
}
