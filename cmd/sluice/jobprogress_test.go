package main

import (
	"fmt"
	"strings"
	"testing"
)

// `job wait` on one job shows the job's own progress (percent and data),
// and `job get` shows it.
func TestJobWaitShowsItsProgress(t *testing.T) {
	t.Parallel()
	s := newInProcess(t)
	id := s.enqueue(`{"queue":"crawl","kind":"k"}`)
	var res struct {
		Leases []struct {
			Token string `json:"token"`
		} `json:"leases"`
	}
	s.post("/v1/worker/lease", `{"queues":["crawl"],"worker_id":"w"}`, &res)
	tok := res.Leases[0].Token
	r := s.cli("job", "wait", id)
	r.showed(t, "wait: active 1")
	s.post("/v1/worker/jobs/"+id+"/progress", fmt.Sprintf(`{"token":%q,"percent":42,"data":{"pages":7}}`, tok), nil)
	r.showed(t, "job "+id+`: active 42% {"pages":7}`)
	s.post("/v1/worker/jobs/"+id+"/complete", fmt.Sprintf(`{"token":%q}`, tok), nil)
	if code := r.exited(t); code != 0 || !strings.Contains(r.stdout.String(), "completed 1, failed 0, cancelled 0") {
		t.Fatalf("exit %d:\n%s\n%s", code, r.stdout, r.stderr)
	}
	g := s.cli("job", "get", id)
	if code := g.exited(t); code != 0 || !strings.Contains(g.stdout.String(), `progress: 42% {"pages":7}`) {
		t.Fatalf("job get: exit %d:\n%s\n%s", code, g.stdout, g.stderr)
	}
}
