package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/server/config"
)

// The end-to-end tests build the real binary once and start it as a
// process on a free port (--listen 127.0.0.1:0) with a temporary data
// directory, exactly as a user would.

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "sluice")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running `sluice serve`.
type proc struct {
	t        *testing.T
	cmd      *exec.Cmd
	url      string
	grpcAddr string
	stderr   *syncBuffer
	done     chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// start runs `sluice serve` with args in dir and waits until it listens.
func start(t *testing.T, dir string, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data")}, args...)...)
	cmd.Dir = dir
	cmd.Env = serveEnv(env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, cmd: cmd, stderr: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() { p.stop() })
	timeout := time.After(testutil.Patience)
	for p.url == "" || (contains(args, "--grpc") && p.grpcAddr == "") {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("sluice exited before listening:\n%s", p.stderr)
			}
			if u, ok := strings.CutPrefix(line, "sluice listening on "); ok {
				p.url = u
			}
			if a, ok := strings.CutPrefix(line, "sluice rate-limit gRPC on "); ok {
				p.grpcAddr = a
			}
		case <-timeout:
			t.Fatalf("sluice did not start:\n%s", p.stderr)
		}
	}
	go func() {
		for range lines {
		}
	}()
	return p
}

// serveEnv is the test's environment without the variables sluice serve
// reads (the suite's own SLUICE_REDIS_URL would move every server to
// Redis), plus extra.
func serveEnv(extra ...string) []string {
	return append(config.WithoutServeEnv(os.Environ()), extra...)
}

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop() error {
	if p.cmd.ProcessState != nil {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(testutil.Patience):
		_ = p.cmd.Process.Kill()
		return fmt.Errorf("sluice did not stop on SIGTERM:\n%s", p.stderr)
	}
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (p *proc) do(method, path, token, body string) answer {
	p.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, p.url+path, rd)
	if err != nil {
		p.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &a.body)
	return a
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

const e2eConfig = `
limits:
  scenes:
    member:
      subject: [member]
      policies:
        export-usage: {limits: [{quota: 1, window: 60s}]}
  timeout: 2m # no load turns a decision into the failure mode
`

func TestServeLimitAllowThenDeny(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "sluice.yaml"), e2eConfig) // picked up without --config
	p := start(t, dir, nil)
	body := `{"subject":{"member":"42"}}`
	a := p.do("POST", "/v1/limits/member/export-usage", "", body)
	if a.status != 200 || a.header.Get("RateLimit-Policy") != `"member/export-usage";q=1;w=60` {
		t.Fatalf("first: %d %v %s", a.status, a.header, a.raw)
	}
	a = p.do("POST", "/v1/limits/member/export-usage", "", body)
	if a.status != 429 || a.header.Get("Retry-After") == "" || !strings.HasPrefix(a.header.Get("RateLimit"), `"member/export-usage";r=0;t=`) {
		t.Fatalf("second: %d %v %s", a.status, a.header, a.raw)
	}
	if a.body["detail"] != "Too many requests: 1 every 60 seconds" {
		t.Errorf("detail = %v", a.body["detail"])
	}
	if err := p.stop(); err != nil {
		t.Fatalf("exit: %v\n%s", err, p.stderr)
	}
	if !strings.Contains(p.stderr.String(), "sluice: stopped") {
		t.Errorf("no clean stop in the log:\n%s", p.stderr)
	}
}

func TestServeBuiltInExample(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := start(t, dir, nil, "--log-format", "json")
	testutil.Eventually(t, "the JSON log line sluice: listening", func() bool {
		return strings.Contains(p.stderr.String(), `"msg":"sluice: listening"`)
	})
	for _, line := range strings.Split(strings.TrimSpace(p.stderr.String()), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("log line is not JSON: %s", line)
		}
	}
	if a := p.do("GET", "/v1/limits", "", ""); a.status != 200 || len(a.body["scenes"].([]any)) != 7 {
		t.Fatalf("scenes: %d %s", a.status, a.raw)
	}
	if a := p.do("GET", "/readyz", "", ""); a.status != 200 {
		t.Fatalf("readyz: %d %s", a.status, a.raw)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "jobs.db")); err != nil {
		t.Errorf("data dir not created: %v", err)
	}
}

func TestServeReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "limits.yaml")
	writeFile(t, path, e2eConfig)
	p := start(t, dir, nil, "--config", path)
	body := `{"subject":{"member":"1"}}`
	p.do("POST", "/v1/limits/member/export-usage", "", body)
	// A valid change: quota 1 → 5. Wait until the server sees it.
	writeFile(t, path, strings.Replace(e2eConfig, "quota: 1", "quota: 5", 1))
	testutil.Eventually(t, "the new quota 5 to be served", func() bool {
		return p.do("POST", "/v1/limits/member/export-usage/peek", "", body).raw != "" &&
			limitQuota(p.do("POST", "/v1/limits/member/export-usage/peek", "", body)) == 5
	})
	// An invalid change is rejected with a log line naming the line; the
	// old config stays.
	writeFile(t, path, strings.Replace(e2eConfig, "quota: 1", "quota: -1", 1))
	testutil.Eventually(t, "the log to say rejected", func() bool { return strings.Contains(p.stderr.String(), "rejected") })
	if !strings.Contains(p.stderr.String(), "line 7") {
		t.Errorf("rejection does not name the line:\n%s", p.stderr)
	}
	if q := limitQuota(p.do("POST", "/v1/limits/member/export-usage/peek", "", body)); q != 5 {
		t.Errorf("quota after a bad file = %v, want 5 (kept)", q)
	}
}

func limitQuota(a answer) float64 {
	limits, _ := a.body["limits"].([]any)
	if len(limits) == 0 {
		return -1
	}
	return limits[0].(map[string]any)["quota"].(float64)
}

func TestServeAuth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := e2eConfig + `
auth:
  tokens:
    - {name: api, token: "${E2E_LIMITER_TOKEN}", roles: [limiter]}
    - {name: worker, token: "${E2E_WORKER_TOKEN}", roles: [worker]}
`
	writeFile(t, filepath.Join(dir, "sluice.yaml"), cfg)
	limiter, worker := "limiter-secret-0123456789", "worker-secret-0123456789"
	p := start(t, dir, []string{"E2E_LIMITER_TOKEN=" + limiter, "E2E_WORKER_TOKEN=" + worker})
	body := `{"subject":{"member":"1"}}`
	cases := []struct {
		token  string
		status int
		detail string
	}{
		{"", 401, "missing bearer token: send Authorization: Bearer <token>"},
		{"nope-nope-nope-nope", 401, "invalid bearer token"},
		{worker, 403, `token "worker" lacks the limiter role`},
		{limiter, 200, ""},
	}
	for _, tc := range cases {
		a := p.do("POST", "/v1/limits/member/export-usage", tc.token, body)
		if a.status != tc.status || (tc.detail != "" && a.body["detail"] != tc.detail) {
			t.Errorf("token %q: %d %s, want %d %q", tc.token, a.status, a.raw, tc.status, tc.detail)
		}
	}
	if strings.Contains(p.stderr.String(), limiter) || strings.Contains(p.stderr.String(), worker) {
		t.Error("a token appears in the log")
	}
	// The client commands take the token from --token or SLUICE_TOKEN.
	cli := func(env string, args ...string) (string, error) {
		cmd := exec.Command(binary, append([]string{"--server", p.url, "limit", "peek", "member", "export-usage", "member=1"}, args...)...)
		cmd.Env = append(os.Environ(), env)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := cli("SLUICE_TOKEN=" + limiter); err != nil || !strings.HasPrefix(out, "peek member/export-usage") {
		t.Errorf("token from the environment: %v %s", err, out)
	}
	if out, err := cli("SLUICE_TOKEN=", "--token", limiter); err != nil {
		t.Errorf("--token: %v %s", err, out)
	}
	if out, err := cli("SLUICE_TOKEN="); err == nil || !strings.Contains(out, "missing bearer token") {
		t.Errorf("no token: %v %s", err, out)
	}
}

func TestServeRefusesOpenNonLoopback(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(binary, "serve", "--listen", "0.0.0.0:0", "--data-dir", filepath.Join(dir, "data"))
	cmd.Dir = dir
	cmd.Env = serveEnv()
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no auth tokens configured") {
		t.Fatalf("want a refusal, got %v:\n%s", err, out)
	}
}

func TestServeBadInputs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "sluice.yaml"), e2eConfig+"server:\n  max_body_bytes: 64\n")
	p := start(t, dir, nil)
	cases := []struct {
		method, path, body string
		status             int
		detail             string
	}{
		{"POST", "/v1/limits/nope/x", `{}`, 404, `unknown scene "nope" (scenes: member)`},
		{"POST", "/v1/limits/member/nope", `{}`, 404, `unknown policy "nope" in scene "member" (policies: export-usage)`},
		{"POST", "/v1/limits/member/export-usage", `{"subject":{}}`, 400, `missing subject field "member" for scene "member" (fields: member)`},
		{"POST", "/v1/limits/member/export-usage", `{"subject":`, 400, "bad JSON: the body ends in the middle of a value"},
		{"POST", "/v1/limits/member/export-usage", `{"subject":{"member":"` + strings.Repeat("x", 100) + `"}}`, 413, "request body is larger than the limit of 64 bytes"},
		{"GET", "/v1/jobs/404", "", 404, `unknown job "404"`},
		{"POST", "/v1/jobs", `{"queue":"q"}`, 400, "kind must not be empty"},
	}
	for _, tc := range cases {
		a := p.do(tc.method, tc.path, "", tc.body)
		if a.status != tc.status || a.body["detail"] != tc.detail || a.header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s %s: %d %q %s\nwant %d %q", tc.method, tc.path, a.status, a.header.Get("Content-Type"), a.raw, tc.status, tc.detail)
		}
	}
}

func TestConfigCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, "server:\n  listen: nowhere\nlimits:\n  scenes:\n    s:\n      subject: []\n      policies: {p: {limits: [{quota: 0, window: 1s}]}}\n")
	out, err := exec.Command(binary, "config", "check", bad).CombinedOutput()
	var ee *exec.ExitError
	if !asExit(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit = %v, want 2:\n%s", err, out)
	}
	for _, want := range []string{
		bad + `:2: server.listen: must be host:port such as 127.0.0.1:8080, got "nowhere"`,
		bad + ":6: limits.scenes.s.subject: must name at least one subject field, such as [member]",
		bad + ":7: limits.scenes.s.policies.p.limits[0].quota: must be a positive integer, got 0",
	} {
		if !strings.Contains(string(out), want+"\n") {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, err = exec.Command(binary, "config", "check", "../../sluice.example.yaml").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok (7 scenes, 25 policies, 2 envoy rules, 0 tokens)") {
		t.Fatalf("example: %v\n%s", err, out)
	}
	tuned := filepath.Join(dir, "tuned.yaml")
	writeFile(t, tuned, `storage:
  sqlite: {busy_timeout: 7s, durable: true}
  redis_breaker: {failures: 2}
webhooks:
  subscriptions: [{name: a, url: "https://hooks.example.com/x"}]
  delivery: {timeout: 5s, max_attempts: 3, backoff: {base: 1s}, host_rate: {calls: 5, per: 1s}}
queues:
  priority: {enabled: true, base: 0}
`)
	out, err = exec.Command(binary, "config", "check", tuned).CombinedOutput()
	for _, want := range []string{
		"  on: load priority (base 0, default tier standard)\n",
		"  storage tuning: sqlite {busy_timeout 7s, durable}; redis_breaker {failures 2}\n",
		"  webhook delivery: timeout 5s, max_attempts 3, backoff {base 1s}, host_rate {calls 5, per 1s}\n",
	} {
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("tuned: %v, output lacks %q:\n%s", err, want, out)
		}
	}
}

func asExit(err error, target **exec.ExitError) bool {
	ee, ok := err.(*exec.ExitError)
	*target = ee
	return ok
}

// cli returns a function that runs the sluice binary against the server
// at url and gives back its combined output and exit code.
func cli(t *testing.T, url string) func(args ...string) (string, int) {
	return func(args ...string) (string, int) {
		cmd := exec.Command(binary, append([]string{"--server", url}, args...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out.String(), ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return out.String(), 0
	}
}
