package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
	"github.com/sluicehq/sluice/server"
)

// inProcess is a real server (SQLite jobs) on an httptest listener, for
// running the command in this process against it.
type inProcess struct {
	t   *testing.T
	url string
}

func newInProcess(t *testing.T) *inProcess {
	t.Helper()
	b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlitequeue.Options{})
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
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &inProcess{t: t, url: hs.URL}
}

// post sends body to path and decodes the answer into out.
func (s *inProcess) post(path, body string, out any) {
	s.t.Helper()
	resp, err := http.Post(s.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		s.t.Fatalf("POST %s: HTTP %d", path, resp.StatusCode)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			s.t.Fatal(err)
		}
	}
}

func (s *inProcess) enqueue(body string) string {
	var res struct {
		Job job `json:"job"`
	}
	s.post("/v1/jobs", body, &res)
	return res.Job.ID
}

// lease takes one job of queue q and returns its id and a func that
// completes it.
func (s *inProcess) lease(q string) (string, func()) {
	s.t.Helper()
	var res struct {
		Leases []struct {
			Job   job    `json:"job"`
			Token string `json:"token"`
		} `json:"leases"`
	}
	s.post("/v1/worker/lease", fmt.Sprintf(`{"queues":[%q],"worker_id":"w"}`, q), &res)
	if len(res.Leases) != 1 {
		s.t.Fatalf("lease %s: %d leases", q, len(res.Leases))
	}
	l := res.Leases[0]
	return l.Job.ID, func() { s.post("/v1/worker/jobs/"+l.Job.ID+"/complete", fmt.Sprintf(`{"token":%q}`, l.Token), nil) }
}

// cliRun is the command running in this process.
type cliRun struct {
	stdout, stderr *syncBuffer
	code           chan int
}

func (s *inProcess) cli(args ...string) *cliRun {
	r := &cliRun{stdout: &syncBuffer{}, stderr: &syncBuffer{}, code: make(chan int, 1)}
	go func() { r.code <- run(append([]string{"--server", s.url}, args...), r.stdout, r.stderr) }()
	return r
}

// showed waits until standard error holds want.
func (r *cliRun) showed(t *testing.T, want string) {
	t.Helper()
	testutil.Eventually(t, fmt.Sprintf("standard error to show %q", want), func() error {
		if strings.Contains(r.stderr.String(), want) {
			return nil
		}
		select {
		case code := <-r.code:
			t.Fatalf("exited %d before showing %q:\n%s\n%s", code, want, r.stdout, r.stderr)
		default:
		}
		return fmt.Errorf("it shows:\n%s", r.stderr)
	})
}

// exited waits for the exit code.
func (r *cliRun) exited(t *testing.T) int {
	t.Helper()
	select {
	case code := <-r.code:
		return code
	case <-time.After(60 * time.Second):
		t.Fatalf("did not exit:\n%s\n%s", r.stdout, r.stderr)
		return -1
	}
}

// `job enqueue --wait` shows the job pending from the first poll, before
// any worker has it, then running, then done.
func TestEnqueueWaitShowsProgressAtOnce(t *testing.T) {
	t.Parallel()
	s := newInProcess(t)
	r := s.cli("job", "enqueue", "--queue", "mail", "--kind", "send", "--wait")
	r.showed(t, "wait: pending 1")
	_, complete := s.lease("mail")
	r.showed(t, "wait: active 1")
	complete()
	if code := r.exited(t); code != 0 || !strings.Contains(r.stdout.String(), "completed 1, failed 0, cancelled 0") {
		t.Fatalf("exit %d:\n%s\n%s", code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr.String(), "wait: completed 1") {
		t.Errorf("final counts not shown:\n%s", r.stderr)
	}
}

// `job wait` shows every job's state from the first poll on.
func TestJobWaitShowsCountsByState(t *testing.T) {
	t.Parallel()
	s := newInProcess(t)
	ids := []string{s.enqueue(`{"queue":"q","kind":"k"}`), s.enqueue(`{"queue":"q","kind":"k"}`), s.enqueue(`{"queue":"q","kind":"k","delay_ms":3600000}`)}
	_, complete := s.lease("q")
	r := s.cli(append([]string{"job", "wait"}, ids...)...)
	r.showed(t, "wait: active 1, pending 1, scheduled 1")
	complete()
	r.showed(t, "wait: completed 1, pending 1, scheduled 1")
	s.post("/v1/jobs/"+ids[2]+"/cancel", "", nil)
	_, complete = s.lease("q")
	complete()
	if code := r.exited(t); code != 1 || !strings.Contains(r.stdout.String(), "completed 2, failed 0, cancelled 1") {
		t.Fatalf("exit %d:\n%s\n%s", code, r.stdout, r.stderr)
	}
}

// `group wait` draws its counts with the same display.
func TestGroupWaitShowsCountsByState(t *testing.T) {
	t.Parallel()
	s := newInProcess(t)
	s.post("/v1/groups", `{"id":"crawl"}`, nil)
	s.enqueue(`{"queue":"pages","kind":"k","group":"crawl"}`)
	s.enqueue(`{"queue":"pages","kind":"k","group":"crawl"}`)
	r := s.cli("group", "wait", "crawl")
	r.showed(t, "group crawl: pending 2")
	for range 2 {
		_, complete := s.lease("pages")
		complete()
	}
	if code := r.exited(t); code != 0 || !strings.Contains(r.stdout.String(), "group crawl: done, 2/2 finished") {
		t.Fatalf("exit %d:\n%s\n%s", code, r.stdout, r.stderr)
	}
}
