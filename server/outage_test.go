package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/server/config"
)

const outageConfig = faultConfig + `
queues:
  tenants:
    overrides:
      acme: {concurrency: 2}
`

// lockedBuffer is a log sink safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// outageCall is an HTTP call to a running server.
func outageCall(t *testing.T, base, method, path, body string) reply {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

// TestServeWhileRedisDown starts the server against a Redis address
// nobody listens on: it starts, answers scenes by their failure mode, job
// calls and /readyz with 503; then a Redis starts listening there and
// everything works, queues.tenants included, without a restart.
func TestServeWhileRedisDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	redisAddr := ln.Addr().String()
	ln.Close()
	cfg, err := config.Parse([]byte(outageConfig), "outage.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Server.Listen = "127.0.0.1:0"
	cfg.Storage.RedisURL = "redis://:s3cret@" + redisAddr + "/0"
	// Refused dials answer at once; once Redis is back, a decision must not
	// time out into the failure mode because the machine is busy.
	cfg.Limits.Timeout = config.Duration(testutil.Patience)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- Run(ctx, RunOptions{Config: cfg, Logger: slog.New(slog.NewJSONHandler(logs, nil)), Listening: func(h, _ string) { addr <- h }})
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case err := <-done:
		t.Fatalf("Run exited with Redis down: %v", err)
	}

	if r := outageCall(t, base, "POST", "/v1/limits/chat/qpm", `{"subject":{"team":"t"}}`); r.status != 200 || r.body["allowed"] != true || r.body["failure_mode"] != "open" {
		t.Errorf("fail-open scene: %d %s", r.status, r.raw)
	}
	if r := outageCall(t, base, "POST", "/v1/limits/auth/login", `{"subject":{"account":"a"}}`); r.status != 503 {
		t.Errorf("fail-closed scene: %d %s", r.status, r.raw)
	}
	if r := outageCall(t, base, "GET", "/readyz", ""); r.status != 503 {
		t.Errorf("readyz: %d %s", r.status, r.raw)
	}
	if r := outageCall(t, base, "POST", "/v1/jobs", `{"queue":"q","kind":"k"}`); r.status != 503 || r.header.Get("Retry-After") == "" {
		t.Errorf("enqueue: %d %v %s", r.status, r.header, r.raw)
	}

	m := miniredis.NewMiniRedis()
	m.RequireAuth("s3cret")
	if err := m.StartAddr(redisAddr); err != nil {
		t.Skipf("cannot listen on %s: %v", redisAddr, err)
	}
	defer m.Close()
	// Readiness is the breaker's probe; go-redis's pool may repeat its
	// last dial error for up to a second after Redis is back.
	testutil.Eventually(t, "readyz 200 after Redis came back", func() error {
		if r := outageCall(t, base, "GET", "/readyz", ""); r.status != 200 {
			return fmt.Errorf("readyz %d %s", r.status, r.raw)
		}
		return nil
	})
	if r := outageCall(t, base, "POST", "/v1/limits/auth/login", `{"subject":{"account":"a"}}`); r.status != 200 || r.body["failure_mode"] != nil {
		t.Errorf("fail-closed scene after recovery: %d %s", r.status, r.raw)
	}
	if r := outageCall(t, base, "POST", "/v1/jobs", `{"queue":"q","kind":"k"}`); r.status != 201 {
		t.Errorf("enqueue after recovery: %d %s", r.status, r.raw)
	}
	testutil.Eventually(t, "queues.tenants written after Redis came back", func() error {
		r := outageCall(t, base, "GET", "/v1/tenants/acme", "")
		if own, _ := r.body["own"].(map[string]any); r.status != 200 || own["limit"] != 2.0 {
			return fmt.Errorf("tenant acme: %d %s", r.status, r.raw)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	out := logs.String()
	if strings.Contains(out, "s3cret") {
		t.Errorf("the logs show the Redis password:\n%s", out)
	}
	if !strings.Contains(out, `"redis":"`+redisAddr+`/0"`) {
		t.Errorf("the logs do not name the Redis address %s:\n%s", redisAddr, out)
	}
}
