package main

import (
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/sluicehq/sluice/internal/testutil"
)

const outageConfig = `
limits:
  timeout: 2m # refused dials fail at once; no load turns a decision after recovery into the failure mode
  scenes:
    chat:
      subject: [team]
      policies:
        qpm: {limits: [{quota: 5, window: 60s}]}
    auth:
      subject: [account]
      failure_mode: closed
      policies:
        login: {limits: [{quota: 5, window: 60s}]}
`

// TestServeStartsWithRedisDown runs `sluice serve` on a Redis address
// nobody listens on, with JSON logs: it starts and serves by the failure
// modes (open 200, closed 503; jobs and /readyz 503); once a Redis listens
// there, it serves from it without a restart. Every line on stderr is
// JSON, go-redis's own included, and none shows the password.
func TestServeStartsWithRedisDown(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "sluice.yaml"), outageConfig)
	p := start(t, dir, nil, "--redis-url", "redis://:s3cret@"+addr+"/0", "--log-format", "json")

	if a := p.do("POST", "/v1/limits/chat/qpm", "", `{"subject":{"team":"t"}}`); a.status != 200 || a.body["failure_mode"] != "open" {
		t.Errorf("fail-open scene: %d %s", a.status, a.raw)
	}
	if a := p.do("POST", "/v1/limits/auth/login", "", `{"subject":{"account":"a"}}`); a.status != 503 {
		t.Errorf("fail-closed scene: %d %s", a.status, a.raw)
	}
	if a := p.do("POST", "/v1/jobs", "", `{"queue":"q","kind":"k"}`); a.status != 503 {
		t.Errorf("enqueue: %d %s", a.status, a.raw)
	}
	if a := p.do("GET", "/readyz", "", ""); a.status != 503 {
		t.Errorf("readyz: %d %s", a.status, a.raw)
	}

	m := miniredis.NewMiniRedis()
	m.RequireAuth("s3cret")
	if err := m.StartAddr(addr); err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	defer m.Close()
	testutil.Eventually(t, "readyz 200 after Redis came back", func() error {
		if a := p.do("GET", "/readyz", "", ""); a.status != 200 {
			return fmt.Errorf("readyz %d; log:\n%s", a.status, p.stderr)
		}
		return nil
	})
	if a := p.do("POST", "/v1/limits/auth/login", "", `{"subject":{"account":"a"}}`); a.status != 200 || a.body["failure_mode"] != nil {
		t.Errorf("fail-closed scene after recovery: %d %s", a.status, a.raw)
	}
	if a := p.do("POST", "/v1/jobs", "", `{"queue":"q","kind":"k"}`); a.status != 201 {
		t.Errorf("enqueue after recovery: %d %s", a.status, a.raw)
	}
	if err := p.stop(); err != nil {
		t.Fatalf("exit: %v\n%s", err, p.stderr)
	}
	logs := p.stderr.String()
	goRedis := false
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("stderr line is not JSON: %q", line)
			continue
		}
		goRedis = goRedis || m["source"] == "go-redis"
		if m["msg"] == "sluice: listening" && m["redis"] != addr+"/0" {
			t.Errorf("start line names redis %v, want %s/0: %s", m["redis"], addr, line)
		}
	}
	if !goRedis {
		t.Errorf("no go-redis line in the logs (its failed dials):\n%s", logs)
	}
	if strings.Contains(logs, "s3cret") {
		t.Errorf("the logs show the Redis password:\n%s", logs)
	}
}
