package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
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

// `job enqueue --file --wait` writes lines, no bar, where standard error
// is not a terminal: one per batch enqueued, then the wait's.
func TestEnqueueFileWaitWritesLines(t *testing.T) {
	t.Parallel()
	s := newInProcess(t)
	file := filepath.Join(t.TempDir(), "jobs.jsonl")
	if err := os.WriteFile(file, []byte(strings.Repeat(`{"queue":"q","kind":"k"}`+"\n", 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	r := s.cli("job", "enqueue", "--file", file, "--wait")
	r.showed(t, "enqueue: 3/3\n")
	r.showed(t, "wait: pending 3\n")
	for range 3 {
		_, complete := s.lease("q")
		complete()
	}
	if code := r.exited(t); code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", code, r.stdout, r.stderr)
	}
	noRedraws(t, r.stderr.String())
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
	noRedraws(t, r.stderr.String())
}

// noRedraws fails when out, written to something that is not a terminal,
// holds a carriage return or an escape sequence: a bar redrawn in place.
func noRedraws(t *testing.T, out string) {
	t.Helper()
	if strings.ContainsAny(out, "\r\x1b") {
		t.Errorf("a bar redrawn in place where standard error is not a terminal:\n%q", out)
	}
}

// countLines is how many lines of out are exactly line.
func countLines(out, line string) int {
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if l == line {
			n++
		}
	}
	return n
}

// progress reports a percent for a leased job.
func (s *inProcess) progress(id, token string, percent int) {
	s.post("/v1/worker/jobs/"+id+"/progress", fmt.Sprintf(`{"token":%q,"percent":%d}`, token, percent), nil)
}

// leaseAll takes n jobs of queue q: their ids and tokens.
func (s *inProcess) leaseAll(q string, n int) (ids, tokens []string) {
	s.t.Helper()
	var res struct {
		Leases []struct {
			Job   job    `json:"job"`
			Token string `json:"token"`
		} `json:"leases"`
	}
	s.post("/v1/worker/lease", fmt.Sprintf(`{"queues":[%q],"worker_id":"w","max":%d}`, q, n), &res)
	if len(res.Leases) != n {
		s.t.Fatalf("lease %s: %d leases, want %d", q, len(res.Leases), n)
	}
	for _, l := range res.Leases {
		ids, tokens = append(ids, l.Job.ID), append(tokens, l.Token)
	}
	return ids, tokens
}

// `job wait` on several jobs shows each job's own percent, not one shared.
func TestJobWaitShowsEachJobsOwnPercent(t *testing.T) {
	t.Parallel()
	s := newInProcess(t)
	s.enqueue(`{"queue":"q","kind":"k"}`)
	s.enqueue(`{"queue":"q","kind":"k"}`)
	ids, tokens := s.leaseAll("q", 2)
	r := s.cli("job", "wait", ids[0], ids[1])
	r.showed(t, "wait: active 2")
	s.progress(ids[0], tokens[0], 30)
	s.progress(ids[1], tokens[1], 70)
	r.showed(t, "job "+ids[0]+": active 30%\n")
	r.showed(t, "job "+ids[1]+": active 70%\n")
	s.progress(ids[1], tokens[1], 80)
	r.showed(t, "job "+ids[1]+": active 80%\n")
	for i := range ids {
		s.post("/v1/worker/jobs/"+ids[i]+"/complete", fmt.Sprintf(`{"token":%q}`, tokens[i]), nil)
	}
	if code := r.exited(t); code != 0 || !strings.Contains(r.stdout.String(), "completed 2, failed 0, cancelled 0") {
		t.Fatalf("exit %d:\n%s\n%s", code, r.stdout, r.stderr)
	}
	out := r.stderr.String()
	if n := countLines(out, "job "+ids[0]+": active 30%"); n != 1 {
		t.Errorf("job %s's 30%% shown %d times, want once (one line per change):\n%s", ids[0], n, out)
	}
	noRedraws(t, out)
}

// Where standard error is not a terminal, `job wait` on one job writes one
// line per change, never the same line twice in a row and no bar.
func TestJobWaitWritesOneLinePerChange(t *testing.T) {
	t.Parallel()
	s := newInProcess(t)
	id := s.enqueue(`{"queue":"q","kind":"k"}`)
	r := s.cli("job", "wait", id)
	r.showed(t, "job "+id+": pending\nwait: pending 1\n")
	_, tokens := s.leaseAll("q", 1)
	r.showed(t, "job "+id+": active\nwait: active 1\n")
	s.progress(id, tokens[0], 10)
	r.showed(t, "job "+id+": active 10%\n")
	s.progress(id, tokens[0], 20) // the wait has read the job again since 10%
	r.showed(t, "job "+id+": active 20%\n")
	s.post("/v1/worker/jobs/"+id+"/complete", fmt.Sprintf(`{"token":%q}`, tokens[0]), nil)
	if code := r.exited(t); code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", code, r.stdout, r.stderr)
	}
	out := r.stderr.String()
	for _, line := range []string{"job " + id + ": pending", "job " + id + ": active", "job " + id + ": active 10%", "wait: active 1"} {
		if n := countLines(out, line); n != 1 {
			t.Errorf("%q written %d times, want once:\n%s", line, n, out)
		}
	}
	if !strings.HasSuffix(out, "job "+id+": completed 20%\nwait: completed 1\n") {
		t.Errorf("the end is not the job's last line and the counts:\n%s", out)
	}
	noRedraws(t, out)
}

// On a terminal, the bar of a wait for several jobs lists each running
// job's own percent after the counts.
func TestWaitViewDescribesEachRunningJob(t *testing.T) {
	t.Parallel()
	pct := func(f float64) *jobProgress { return &jobProgress{Percent: &f} }
	v := newWaitView(&syncBuffer{}, []string{"7", "8", "9", "10"})
	v.update(job{ID: "7", State: "active", Progress: pct(30)})
	v.update(job{ID: "8", State: "active", Progress: pct(72.5)})
	v.update(job{ID: "9", State: "completed", Progress: pct(100)})
	v.update(job{ID: "10", State: "pending"})
	if got, want := v.describe(), "wait: completed 1, active 2, pending 1 · 7 30%, 8 72.5%"; got != want {
		t.Errorf("describe() = %q, want %q", got, want)
	}
	one := newWaitView(&syncBuffer{}, []string{"7"})
	one.update(job{ID: "7", State: "active", Progress: &jobProgress{Percent: pct(5).Percent, Data: []byte(`{"pages":2}`)}})
	if got, want := one.describe(), `wait: active 1 {"pages":2}`; got != want {
		t.Errorf("describe() of one job = %q, want %q", got, want)
	}
}
