package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"
)

// liveConfig is browserConfig with receivers on loopback allowed, so a
// job's webhook can point at the test's own.
const liveConfig = browserConfig + `
webhooks:
  allow_networks: [127.0.0.0/8]
`

// The job page follows the job through the event stream, not polling
// (the page polls every ten minutes here): its state when a worker takes
// it, its progress bar as the worker reports (moved in place, the same
// bar), and it shows the job's webhook without its header values. The
// jobs view of a queue follows a new job the same way.
func TestBrowserLiveProgress(t *testing.T) {
	needBrowser(t)
	hooks := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer hooks.Close()
	srv := startSluice(t, liveConfig, adminToken)
	ctx := browser(t, 1280, 900)
	errs := pageErrors(ctx)

	status, job := srv.call("POST", "/v1/jobs", map[string]any{"queue": "crawl", "kind": "site", "tenant": "acme",
		"webhook": map[string]any{"url": hooks.URL + "/done", "events": []string{"job.completed"},
			"metadata": map[string]any{"crawl": "c-7"}, "headers": map[string]string{"Authorization": "Bearer very-secret-value"}}})
	if status != http.StatusCreated {
		t.Fatalf("enqueue: %d %v", status, job)
	}
	id := job["job"].(map[string]any)["id"].(string)
	do(t, ctx, "job page",
		chromedp.Navigate(srv.url+"/?refresh=600"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), adminToken),
		chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#logout")),
		chromedp.Navigate(srv.url+"/?refresh=600#/job/"+id),
		waitText("#job-state", "pending"),
		waitText("#job-webhook-url", hooks.URL+"/done"),
		waitText("#job-webhook-events", "job.completed"),
		waitText("#job-webhook-headers", "Authorization (values hidden)"),
		waitContains("#job-webhook-metadata", "c-7"),
		waitJS(`!document.body.innerText.includes("very-secret-value") && !document.body.innerText.includes("[redacted]")`),
		waitJS(`document.querySelector("#stream").dataset.state === "open"`),
	)

	status, leased := srv.call("POST", "/v1/worker/lease", map[string]any{"queues": []string{"crawl"}, "worker_id": "w-1"})
	if status != http.StatusOK || len(leased["leases"].([]any)) != 1 {
		t.Fatalf("lease: %d %v", status, leased)
	}
	token := leased["leases"].([]any)[0].(map[string]any)["token"].(string)
	report := func(body map[string]any) {
		t.Helper()
		body["token"] = token
		if status, out := srv.call("POST", "/v1/worker/jobs/"+id+"/progress", body); status != http.StatusOK {
			t.Fatalf("progress: %d %v", status, out)
		}
	}
	do(t, ctx, "started", waitText("#job-state", "active"))
	report(map[string]any{"percent": 40, "data": map[string]any{"pages": 4}})
	do(t, ctx, "first progress",
		waitText("#job-progress-percent", "40%"),
		waitContains("#job-progress-data", `"pages": 4`),
		// Marked so the next report shows whether the bar was moved or redrawn.
		waitJS(`(document.querySelector("#job-progress progress").dataset.mark = "first", true)`),
	)
	report(map[string]any{"percent": 75, "data": map[string]any{"pages": 9}})
	do(t, ctx, "progress moves in place",
		waitText("#job-progress-percent", "75%"),
		waitContains("#job-progress-data", `"pages": 9`),
		waitJS(`document.querySelector("#job-progress progress").value === 75`),
		waitJS(`document.querySelector("#job-progress progress").dataset.mark === "first"`),
	)

	do(t, ctx, "queue view",
		chromedp.Navigate(srv.url+"/?refresh=600#/jobs?queue=crawl"),
		waitJS(`document.querySelectorAll("#jobs tbody tr[data-job]").length === 1`),
		waitJS(`document.querySelector("#stream").dataset.state === "open"`),
	)
	ids := srv.enqueue("crawl", "acme", "", 2)
	do(t, ctx, "queue view follows",
		waitJS(`document.querySelectorAll("#jobs tbody tr[data-job]").length === 3`),
		waitJS(`!!document.querySelector('#jobs tr[data-job="`+ids[1]+`"]')`),
	)
	// The overview's counts follow too: the job ends, a new one comes.
	row := `#queues tr[data-queue="crawl"]`
	do(t, ctx, "overview",
		chromedp.Navigate(srv.url+"/?refresh=600#/overview"),
		waitText(row+` td[data-col="pending"]`, "2"),
		waitText(row+` td[data-col="active"]`, "1"),
		waitJS(`document.querySelector("#stream").dataset.state === "open"`),
	)
	if status, out := srv.call("POST", "/v1/worker/jobs/"+id+"/complete", map[string]any{"token": token}); status != http.StatusOK {
		t.Fatalf("complete: %d %v", status, out)
	}
	srv.enqueue("crawl", "acme", "", 1)
	do(t, ctx, "overview follows",
		waitText(row+` td[data-col="pending"]`, "3"),
		waitText(row+` td[data-col="active"]`, "0"),
		waitText(row+` td[data-col="completed"]`, "1"),
	)
	if e := errs(); len(e) > 0 {
		t.Fatalf("page errors: %v", e)
	}
}
