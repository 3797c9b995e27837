package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// demoConfig is what the screenshots show: a few of FastGPT's scenes, one
// of them in shadow mode, and no tokens (loopback only).
const demoConfig = `
limits:
  scenes:
    ip:
      subject: [ip]
      policies:
        api: {limits: [{quota: 20, window: 1s}, {quota: 600, window: 1m}]}
    member:
      subject: [member]
      policies:
        chat: {limits: [{quota: 3, window: 1s, algorithm: sliding-window}]}
        export-usage: {limits: [{quota: 1, window: 60s}]}
    team:
      subject: [team]
      shadow: true
      policies:
        chat-qpm: {limits: [{quota: 120, window: 60s}]}
`

// TestScreenshots regenerates docs/img/dashboard-*.png from the running
// binary with demo traffic. It runs only when SLUICE_SCREENSHOTS names the
// output directory:
//
//	SLUICE_SCREENSHOTS=docs/img go test ./server/dashboard -run TestScreenshots -v
//
// A relative directory is taken from the repository root.
func TestScreenshots(t *testing.T) {
	out := os.Getenv("SLUICE_SCREENSHOTS")
	if out == "" {
		t.Skip("set SLUICE_SCREENSHOTS=docs/img to regenerate the dashboard screenshots")
	}
	needBrowser(t)
	if !filepath.IsAbs(out) {
		out = filepath.Join("..", "..", out)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	// Failed jobs' events go to a receiver, so the job page has deliveries.
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(time.Duration(5+rand.IntN(40)) * time.Millisecond)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)
	srv := startSluice(t, demoConfig+`
webhooks:
  allow_networks: [127.0.0.1]
  subscriptions:
    - {name: audit, url: "`+rc.URL+`/hooks/sluice", events: [job.failed]}
`, "")
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	demoTraffic(ctx, &wg, srv)
	t.Cleanup(func() { stop(); wg.Wait() })
	time.Sleep(45 * time.Second) // let the one-minute charts fill

	b := browser(t, 1280, 900)
	shoot := func(name, hash, ready string) {
		t.Helper()
		do(t, b, name, chromedp.Navigate(srv.url+"/"+hash), chromedp.WaitVisible(chromedp.CSS(ready)), chromedp.Sleep(1500*time.Millisecond))
		png, err := chromedp.Run(b, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, "dashboard-"+name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The crawl queue is paused for a while, so the overview shows a pause.
	if status, _ := srv.call("POST", "/v1/queues/crawl/pause", map[string]any{"duration_ms": 30 * 60 * 1000}); status != http.StatusOK {
		t.Fatalf("pause crawl: %d", status)
	}
	// So is imports, which has no jobs yet: it is listed all the same.
	if status, _ := srv.call("POST", "/v1/queues/imports/pause", nil); status != http.StatusOK {
		t.Fatalf("pause imports: %d", status)
	}
	shoot("overview", "#/overview", `#queues tr[data-queue="crawl"] .paused:not([hidden])`)
	shoot("tenants", "#/tenants", "#tenants tbody tr")
	shoot("groups", "#/groups", "#groups tbody tr")
	shoot("jobs", "#/jobs?queue=emails", "#jobs tbody tr")
	_, page := srv.call("GET", "/v1/jobs?state=retrying&limit=1", nil)
	if jobs, _ := page["jobs"].([]any); len(jobs) > 0 {
		shoot("job", "#/job/"+jobs[0].(map[string]any)["id"].(string), "#attempts")
	}
	_, page = srv.call("GET", "/v1/jobs?state=failed&queue=emails&limit=1", nil)
	if jobs, _ := page["jobs"].([]any); len(jobs) > 0 {
		// Tall enough to show the Retry button and the deliveries together.
		do(t, b, "tall", chromedp.EmulateViewport(1280, 1500))
		shoot("job-failed", "#/job/"+jobs[0].(map[string]any)["id"].(string), "#deliveries tbody tr[data-outcome]")
		do(t, b, "back", chromedp.EmulateViewport(1280, 900))
	}
	shoot("limits", "#/limits", `#policies tr[data-policy="ip/api"] svg`)
	do(t, b, "phone", chromedp.EmulateViewport(390, 844))
	shoot("phone", "#/overview", `#queues tr[data-queue="emails"] svg`)
}

// demoTraffic enqueues jobs for four tenants, runs them through the
// worker protocol (some fail and retry), and makes rate-limit decisions,
// some over the limit, until ctx ends.
func demoTraffic(ctx context.Context, wg *sync.WaitGroup, srv *instance) {
	tenants := []struct {
		name string
		rate int // jobs per tick
	}{{"acme", 4}, {"globex", 2}, {"initech", 1}, {"umbrella", 1}}
	for i := range 120 {
		srv.enqueue("crawl", "acme", "crawl-example.com", 1)
		if i < 40 {
			srv.enqueue("crawl", "initech", "crawl-docs.dev", 1)
		}
	}
	srv.enqueue("crawl", "globex", "crawl-news.site", 25)
	srv.enqueue("exports", "acme", "", 4)
	srv.enqueue("reports", "globex", "", 1)
	loop := func(every time.Duration, fn func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					fn()
				}
			}
		}()
	}
	loop(400*time.Millisecond, func() {
		for _, tn := range tenants {
			srv.enqueue("emails", tn.name, "", tn.rate)
		}
	})
	for w := range 3 {
		queue := []string{"emails", "emails", "crawl"}[w]
		loop(250*time.Millisecond, func() { work(srv, queue, fmt.Sprintf("worker-%d", w+1)) })
	}
	loop(25*time.Millisecond, func() { // a busy client that runs into the limit
		srv.call("POST", "/v1/limits/ip/api", map[string]any{"subject": map[string]any{"ip": "198.51.100.7"}})
	})
	loop(50*time.Millisecond, func() {
		ip := fmt.Sprintf("203.0.113.%d", rand.IntN(4))
		srv.call("POST", "/v1/limits/ip/api", map[string]any{"subject": map[string]any{"ip": ip}})
		srv.call("POST", "/v1/limits/member/chat", map[string]any{"subject": map[string]any{"member": rand.IntN(3)}})
		srv.call("POST", "/v1/limits/team/chat-qpm", map[string]any{"subject": map[string]any{"team": "t-1"}})
	})
}

// work leases a few jobs and finishes them: most complete, some fail.
func work(srv *instance, queue, worker string) {
	status, out := srv.call("POST", "/v1/worker/lease", map[string]any{"queues": []string{queue}, "worker_id": worker, "max": 3})
	if status != http.StatusOK {
		return
	}
	for _, l := range out["leases"].([]any) {
		l := l.(map[string]any)
		id := l["job"].(map[string]any)["id"].(string)
		tok := l["token"].(string)
		time.Sleep(time.Duration(20+rand.IntN(60)) * time.Millisecond)
		switch rand.IntN(30) {
		case 0, 1, 2:
			srv.call("POST", "/v1/worker/jobs/"+id+"/fail", map[string]any{"token": tok, "error": "smtp: 421 4.7.0 too many connections, try again later", "retry_in_ms": 30000})
			continue
		case 3:
			srv.call("POST", "/v1/worker/jobs/"+id+"/fail", map[string]any{"token": tok, "error": "fetch: 404 Not Found", "permanent": true})
			continue
		}
		srv.call("POST", "/v1/worker/jobs/"+id+"/complete", map[string]any{"token": tok, "result": map[string]any{"ok": true}})
	}
}
