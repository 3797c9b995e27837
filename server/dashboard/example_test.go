package dashboard_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/server/dashboard"
)

// An Activity is fed by a Limiter's observer and the job transitions the
// server sees, and reports the last minute one point per second.
func ExampleActivity() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	a := dashboard.NewActivity(dashboard.ActivityOptions{Now: func() time.Time { return now }, Window: 3 * time.Second})

	a.ObserveLimit(ratelimit.Event{Scene: "member", Policy: "chat", Allowed: true, Decision: ratelimit.Decision{Allowed: true}})
	now = now.Add(time.Second)
	a.ObserveLimit(ratelimit.Event{Scene: "member", Policy: "chat"}) // denied
	a.JobStarted("emails", 40*time.Millisecond)
	a.JobEnded("emails", queue.StateCompleted)

	p := a.Limits().Policies[0]
	fmt.Println(p.Scene, p.Policy, "allowed", p.Series.Allowed, "denied", p.Series.Denied)
	q := a.Queues().Queues[0]
	fmt.Println(q.Queue, "started", q.Series.Started, "finished", q.Series.Finished, "p50", *q.Latency.P50MS, "ms")
	// Output:
	// member chat allowed [0 1 0] denied [0 0 1]
	// emails started [0 0 1] finished [0 0 1] p50 39.5 ms
}

// Handler serves the page at "/" and its files under "/ui/".
func ExampleHandler() {
	srv := httptest.NewServer(dashboard.Handler())
	defer srv.Close()
	for _, path := range []string{"/", "/ui/app.js", "/ui/missing.js"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// Output:
	// / 200 text/html; charset=utf-8
	// /ui/app.js 200 text/javascript; charset=utf-8
	// /ui/missing.js 404 application/problem+json
}
