package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// worker speaks the HTTP worker protocol the way a worker in any language
// would: lease with a long-poll, work, complete with the lease token. It
// retries a call while the server is unreachable (a restart), keeping its
// token.
type worker struct {
	id        string
	url       *atomic.Pointer[string]
	queue     string
	hold      time.Duration // simulated work per job
	completed *sync.Map     // job id → *atomic.Int32 completions
	leased    *atomic.Int64
	lost      *atomic.Int64 // 409 answers: lease lost
}

func (w *worker) run(ctx context.Context) {
	for ctx.Err() == nil {
		var res struct {
			Leases []struct {
				Job   struct{ ID string } `json:"job"`
				Token string              `json:"token"`
			} `json:"leases"`
		}
		body := fmt.Sprintf(`{"queues":[%q],"worker_id":%q,"max":4,"wait_ms":500}`, w.queue, w.id)
		if st := w.post(ctx, "/v1/worker/lease", body, &res); st != http.StatusOK {
			continue
		}
		for _, l := range res.Leases {
			w.leased.Add(1)
			if w.hold > 0 {
				time.Sleep(w.hold)
			}
			st := w.post(ctx, "/v1/worker/jobs/"+l.Job.ID+"/complete", fmt.Sprintf(`{"token":%q,"result":{"by":%q}}`, l.Token, w.id), nil)
			switch st {
			case http.StatusOK:
				n, _ := w.completed.LoadOrStore(l.Job.ID, new(atomic.Int32))
				n.(*atomic.Int32).Add(1)
			case http.StatusConflict:
				w.lost.Add(1)
			}
		}
	}
}

// post retries while the server cannot be reached and returns the status.
func (w *worker) post(ctx context.Context, path, body string, out any) int {
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, "POST", *w.url.Load()+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if out != nil {
			_ = json.Unmarshal(raw, out)
		}
		return resp.StatusCode
	}
	return 0
}

type crew struct {
	url       atomic.Pointer[string]
	completed sync.Map
	leased    atomic.Int64
	lost      atomic.Int64
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

func startCrew(url, queue string, n int, hold time.Duration) *crew {
	c := &crew{}
	c.url.Store(&url)
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	for i := range n {
		w := &worker{id: fmt.Sprintf("w%d", i), url: &c.url, queue: queue, hold: hold, completed: &c.completed, leased: &c.leased, lost: &c.lost}
		c.wg.Add(1)
		go func() { defer c.wg.Done(); w.run(ctx) }()
	}
	return c
}

func (c *crew) stop() { c.cancel(); c.wg.Wait() }

// recorded is how many distinct jobs the crew saw completed (200).
func (c *crew) recorded() int {
	n := 0
	c.completed.Range(func(any, any) bool { n++; return true })
	return n
}

// exactlyOnce checks every id was completed once.
func (c *crew) exactlyOnce(t *testing.T, ids []string) {
	t.Helper()
	for _, id := range ids {
		n, ok := c.completed.Load(id)
		if !ok || n.(*atomic.Int32).Load() != 1 {
			t.Errorf("job %s completed %v times, want 1", id, n)
		}
	}
}

func enqueueBatch(t *testing.T, p *proc, queue string, n int) []string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"jobs":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"queue":%q,"kind":"work","payload":{"n":%d}}`, queue, i)
	}
	b.WriteString("]}")
	a := p.do("POST", "/v1/jobs/batch", "", b.String())
	if a.status != 201 {
		t.Fatalf("enqueue: %d %s", a.status, a.raw)
	}
	var ids []string
	for _, j := range a.body["jobs"].([]any) {
		ids = append(ids, j.(map[string]any)["job"].(map[string]any)["id"].(string))
	}
	return ids
}

func counts(t *testing.T, p *proc, queue string) map[string]float64 {
	t.Helper()
	a := p.do("GET", "/v1/queues/stats", "", "")
	for _, q := range a.body["queues"].([]any) {
		q := q.(map[string]any)
		if q["queue"] == queue {
			out := map[string]float64{}
			for k, v := range q["counts"].(map[string]any) {
				out[k] = v.(float64)
			}
			return out
		}
	}
	return map[string]float64{}
}

func runJobsEndToEnd(t *testing.T, p *proc) {
	ids := enqueueBatch(t, p, "e2e", 60)
	c := startCrew(p.url, "e2e", 4, 0)
	// Wait for the workers to have seen every completion, not only the
	// store: stopping them earlier would drop answers in flight.
	testutil.Eventually(t, "60 completions recorded", func() bool { return c.recorded() == 60 })
	if got := counts(t, p, "e2e")["completed"]; got != 60 {
		t.Errorf("store says %v completed, want 60", got)
	}
	c.stop()
	c.exactlyOnce(t, ids)
	if n := c.lost.Load(); n != 0 {
		t.Errorf("%d leases lost", n)
	}
	a := p.do("GET", "/v1/jobs/"+ids[0], "", "")
	if a.body["state"] != "completed" || a.body["result"] == nil {
		t.Errorf("job: %s", a.raw)
	}
}

func TestServeJobsThroughWorkerProtocol(t *testing.T) {
	t.Parallel()
	p := start(t, t.TempDir(), nil)
	runJobsEndToEnd(t, p)
}

// SIGTERM while workers hold jobs: the server stops cleanly, a new one
// starts on the same data, the workers finish with their tokens, and every
// job completes exactly once.
func TestServeSIGTERMLosesNoJob(t *testing.T) {
	t.Parallel()
	sigtermScenario(t, t.TempDir())
}

func sigtermScenario(t *testing.T, dir string, args ...string) {
	p := start(t, dir, nil, args...)
	ids := enqueueBatch(t, p, "term", 40)
	c := startCrew(p.url, "term", 4, 100*time.Millisecond)
	defer c.stop()
	testutil.Eventually(t, "8 leases", func() bool { return c.leased.Load() >= 8 })
	if err := p.stop(); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.stderr)
	}
	if p.cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("exit code %d:\n%s", p.cmd.ProcessState.ExitCode(), p.stderr)
	}
	q := start(t, dir, nil, args...)
	c.url.Store(&q.url)
	testutil.Eventually(t, "40 completions recorded", func() bool { return c.recorded() == 40 })
	if got := counts(t, q, "term")["completed"]; got != 40 {
		t.Errorf("store says %v completed, want 40", got)
	}
	c.stop()
	c.exactlyOnce(t, ids)
	if got := counts(t, q, "term"); got["pending"]+got["active"]+got["failed"] != 0 {
		t.Errorf("left over: %v", got)
	}
}

func TestServeRLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "sluice.yaml"), e2eConfig+`  envoy:
    - domain: api
      scene: member
      policy: export-usage
      entries: [{key: member_id, subject: member}]
`)
	p := start(t, dir, nil, "--grpc", "127.0.0.1:0")
	conn, err := grpc.NewClient(p.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hr, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil || hr.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("gRPC health: %v %v", hr, err)
	}
	rls := rlsv3.NewRateLimitServiceClient(conn)
	req := &rlsv3.RateLimitRequest{Domain: "api", Descriptors: []*corev3.RateLimitDescriptor{{Entries: []*corev3.RateLimitDescriptor_Entry{{Key: "member_id", Value: "5"}}}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, want := range []rlsv3.RateLimitResponse_Code{rlsv3.RateLimitResponse_OK, rlsv3.RateLimitResponse_OVER_LIMIT} {
		resp, err := rls.ShouldRateLimit(ctx, req)
		if err != nil || resp.OverallCode != want {
			t.Fatalf("call %d: %v %v, want %v", i, resp, err, want)
		}
	}
}

func TestClientCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "sluice.yaml"), e2eConfig)
	p := start(t, dir, nil)
	sluice := cli(t, p.url)
	if out, code := sluice("limit", "consume", "member", "export-usage", "member=9"); code != 0 || !strings.HasPrefix(out, "allowed member/export-usage") {
		t.Fatalf("consume: %d %s", code, out)
	}
	if out, code := sluice("limit", "consume", "member", "export-usage", "member=9"); code != 2 || !strings.HasPrefix(out, "denied member/export-usage") {
		t.Fatalf("consume over: %d %s", code, out)
	}
	if out, code := sluice("limit", "peek", "member", "export-usage", "member=9", "--json"); code != 0 || !strings.Contains(out, `"remaining": 0`) {
		t.Fatalf("peek: %d %s", code, out)
	}
	if out, code := sluice("limit", "consume", "member", "nope", "member=9"); code != 1 || !strings.Contains(out, `unknown policy "nope"`) {
		t.Fatalf("unknown policy: %d %s", code, out)
	}
	// Bulk enqueue from a file with --wait while a worker runs the jobs.
	var lines strings.Builder
	for i := range 20 {
		fmt.Fprintf(&lines, `{"queue":"cli","kind":"k","payload":%d}`+"\n", i)
	}
	file := filepath.Join(dir, "jobs.jsonl")
	writeFile(t, file, lines.String())
	c := startCrew(p.url, "cli", 2, 0)
	out, code := sluice("job", "enqueue", "--file", file, "--wait")
	c.stop()
	if code != 0 || !strings.Contains(out, "enqueued 20 jobs") || !strings.Contains(out, "completed 20, failed 0, cancelled 0") {
		t.Fatalf("bulk: %d %s", code, out)
	}
	out, code = sluice("job", "enqueue", "--queue", "cli", "--kind", "k", "--delay", "1h")
	if code != 0 || !strings.Contains(out, "(scheduled)") {
		t.Fatalf("enqueue: %d %s", code, out)
	}
	id := strings.Fields(out)[1]
	if out, code := sluice("job", "cancel", id); code != 0 || !strings.Contains(out, "cancelled") {
		t.Fatalf("cancel: %d %s", code, out)
	}
	if out, code := sluice("job", "wait", id); code != 1 || !strings.Contains(out, "completed 0, failed 0, cancelled 1") {
		t.Fatalf("wait: %d %s", code, out)
	}
	if out, code := sluice("job", "list", "--queue", "cli", "--state", "cancelled"); code != 0 || !strings.Contains(out, id) {
		t.Fatalf("list: %d %s", code, out)
	}
	// Filters: a tenant's jobs of one kind, newest first.
	var tids []string
	for _, kind := range []string{"a", "b", "a"} {
		out, code := sluice("job", "enqueue", "--queue", "cli", "--kind", kind, "--tenant", "acme", "--delay", "1h")
		if code != 0 {
			t.Fatalf("enqueue for acme: %d %s", code, out)
		}
		tids = append(tids, strings.Fields(out)[1])
	}
	out, code = sluice("job", "list", "--tenant", "acme", "--kind", "a", "--newest")
	if rows := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(rows) != 3 ||
		!strings.HasPrefix(rows[1], tids[2]+" ") || !strings.HasPrefix(rows[2], tids[0]+" ") {
		t.Fatalf("list --tenant acme --kind a --newest: %d %s; want %s then %s", code, out, tids[2], tids[0])
	}
	if out, code := sluice("queue", "stats"); code != 0 || !strings.Contains(out, "cli") {
		t.Fatalf("stats: %d %s", code, out)
	}
	// The cancelled job runs again; a second retry is refused while it waits.
	if out, code := sluice("job", "retry", id); code != 0 || !strings.Contains(out, id+"  cli/k  pending  attempt 0/") {
		t.Fatalf("retry: %d %s", code, out)
	}
	if out, code := sluice("job", "retry", id); code != 1 || !strings.Contains(out, "only failed or cancelled jobs can be retried (HTTP 409)") {
		t.Fatalf("retry again: %d %s", code, out)
	}
	pauses := []struct {
		args []string
		want string
	}{
		{[]string{"queue", "pause", "cli"}, "queue cli: paused until resumed"},
		{[]string{"queue", "pause", "cli", "--for", "10m"}, "queue cli: paused until resumed"}, // the later end is kept
		{[]string{"queue", "stats"}, "queue cli: paused until resumed"},
		{[]string{"queue", "resume", "cli"}, "queue cli: not paused"},
		{[]string{"queue", "pause", "cli", "--for", "10m"}, "queue cli: paused until 2"},
		{[]string{"queue", "resume", "cli"}, "queue cli: not paused"},
	}
	for _, p := range pauses {
		if out, code := sluice(p.args...); code != 0 || !strings.Contains(out, p.want) {
			t.Fatalf("%v: %d %s; want %q", p.args, code, out, p.want)
		}
	}
	if out, code := sluice("job", "get", "nope"); code != 1 || !strings.Contains(out, `unknown job "nope" (HTTP 404)`) {
		t.Fatalf("get unknown: %d %s", code, out)
	}
	if out, code := sluice("tenant", "set-limit", "acme", "--concurrency", "2"); code != 0 || !strings.Contains(out, "tenant acme: concurrency 2") {
		t.Fatalf("tenant set-limit: %d %s", code, out)
	}
	if out, code := sluice("tenant", "get", "acme", "--json"); code != 0 || !strings.Contains(out, `"limit": 2`) {
		t.Fatalf("tenant get: %d %s", code, out)
	}
	if out, code := sluice("tenant", "list", "--busiest"); code != 0 || !regexp.MustCompile(`(?m)^acme +2 +0 +0 +0 +3 +0$`).MatchString(out) {
		t.Fatalf("tenant list: %d %s", code, out)
	}
	backoffs := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"tenant", "backoff", "acme", "--for", "1m"}, 0, "tenant acme: backed off until 2"},
		{[]string{"tenant", "get", "acme", "--json"}, 0, `"paused_until"`},
		{[]string{"tenant", "backoff", "acme", "--for", "0"}, 0, "tenant acme: not backed off"},
		{[]string{"tenant", "backoff", "acme"}, 1, `required flag(s) "for" not set`},
		{[]string{"group", "backoff", "some-group", "--for", "30s"}, 1, `unknown group "some-group" (HTTP 404)`},
	}
	for _, b := range backoffs {
		if out, code := sluice(b.args...); code != b.code || !strings.Contains(out, b.want) {
			t.Fatalf("%v: %d %s; want %d and %q", b.args, code, out, b.code, b.want)
		}
	}
	// A group: created, filled from a file, run by workers, waited for.
	if out, code := sluice("group", "create", "crawl", "--max-concurrency", "2", "--completion-kind", "report", "--completion-queue", "reports"); code != 0 || !strings.Contains(out, "group crawl: running") {
		t.Fatalf("group create: %d %s", code, out)
	}
	if out, code := sluice("group", "backoff", "crawl", "--for", "30s"); code != 0 || !strings.Contains(out, "group crawl: backed off until 2") {
		t.Fatalf("group backoff: %d %s", code, out)
	}
	if out, code := sluice("group", "backoff", "crawl", "--for", "0", "--json"); code != 0 || !strings.Contains(out, `"paused": false`) {
		t.Fatalf("group backoff --for 0: %d %s", code, out)
	}
	lines.Reset()
	for i := range 12 {
		fmt.Fprintf(&lines, `{"queue":"pages","kind":"scrape","group":"crawl","payload":%d}`+"\n", i)
	}
	writeFile(t, file, lines.String())
	if out, code := sluice("job", "enqueue", "--file", file); code != 0 {
		t.Fatalf("group jobs: %d %s", code, out)
	}
	g := startCrew(p.url, "pages", 3, 0)
	out, code = sluice("group", "wait", "crawl")
	g.stop()
	if code != 0 || !strings.Contains(out, "group crawl: done, 12/12 finished (completed 12") || !strings.Contains(out, "completion job") {
		t.Fatalf("group wait: %d %s", code, out)
	}
	if out, code := sluice("group", "get", "nope"); code != 1 || !strings.Contains(out, `unknown group "nope" (HTTP 404)`) {
		t.Fatalf("group get unknown: %d %s", code, out)
	}
}

// With SLUICE_REDIS_URL set, the same flows run with --redis-url.
func TestServeOnRedis(t *testing.T) {
	// The keys live under a random prefix, deleted when the test ends.
	_, prefix, ok := redistest.Real(t)
	if !ok {
		t.Skip("SLUICE_REDIS_URL not set: skipping the Redis end-to-end test")
	}
	url := os.Getenv(redistest.EnvURL)
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "sluice.yaml"), e2eConfig+"storage:\n  prefix: \""+string(prefix)+"\"\n")
	p := start(t, dir, nil, "--redis-url", url)
	testutil.Eventually(t, "the log to say store=redis", func() bool { return strings.Contains(p.stderr.String(), "store=redis") })
	body := `{"subject":{"member":"r"}}`
	if a := p.do("POST", "/v1/limits/member/export-usage", "", body); a.status != 200 {
		t.Fatalf("first: %d %s", a.status, a.raw)
	}
	if a := p.do("POST", "/v1/limits/member/export-usage", "", body); a.status != 429 {
		t.Fatalf("second: %d %s", a.status, a.raw)
	}
	runJobsEndToEnd(t, p)
	sigtermScenario(t, dir, "--redis-url", url)
}

// queues.max_depth refuses enqueues over the cap with 503 + Retry-After;
// nothing is stored.
func TestServeQueueDepthCap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "sluice.yaml"), "queues:\n  max_depth: 2\n")
	p := start(t, dir, nil)
	for i := range 2 {
		if a := p.do("POST", "/v1/jobs", "", `{"queue":"capped","kind":"k"}`); a.status != 201 {
			t.Fatalf("enqueue %d: %d %s", i, a.status, a.raw)
		}
	}
	a := p.do("POST", "/v1/jobs", "", `{"queue":"capped","kind":"k"}`)
	if a.status != 503 || a.header.Get("Retry-After") == "" || !strings.Contains(a.body["detail"].(string), "overloaded") {
		t.Fatalf("over the cap: %d %v %s", a.status, a.header, a.raw)
	}
	if got := counts(t, p, "capped")["pending"]; got != 2 {
		t.Errorf("pending = %v, want 2", got)
	}
}

// With SLUICE_POSTGRES_URL set, the same flows run with --postgres-url:
// the jobs are in Postgres, in a schema of the test's own.
func TestServeOnPostgres(t *testing.T) {
	url := pgtest.URL(t)
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "sluice.yaml"), e2eConfig+"storage:\n  postgres: {schema: "+pgtest.Schema(t, url)+"}\n")
	p := start(t, dir, nil, "--postgres-url", url)
	testutil.Eventually(t, "the log to say the jobs are on postgres", func() bool {
		return strings.Contains(p.stderr.String(), "jobs on postgres")
	})
	runJobsEndToEnd(t, p)
}
