package dashboard_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/internal/testutil"
)

const producerToken = "dashboard-producer-token-01"

// adminConfig has an admin and a producer token and a webhook subscription
// to a receiver on 127.0.0.1, which allow_networks lets past the SSRF
// guard.
func adminConfig(receiver string) string {
	return `
auth:
  tokens:
    - {name: ops, token: "` + adminToken + `", roles: [admin]}
    - {name: shop, token: "` + producerToken + `", roles: [producer]}
webhooks:
  allow_networks: [127.0.0.1]
  subscriptions:
    - {name: audit, url: "` + receiver + `", events: [job.failed, job.cancelled]}
`
}

// TestBrowserAdminActions fails a job for good through the worker
// protocol, sees its webhook delivery on the job page and retries it from
// there; pauses a queue from the overview and resumes it; and checks that
// a producer token is offered neither action — in real headless Chromium
// against the real binary.
func TestBrowserAdminActions(t *testing.T) {
	needBrowser(t)
	var received atomic.Int32
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rc.Close()
	srv := startSluice(t, adminConfig(rc.URL+"/hooks"), adminToken)
	ctx := browser(t, 1280, 900)
	errs := pageErrors(ctx)

	// A worker fails the job with a permanent error.
	id := srv.enqueue("emails", "acme", "", 1)[0]
	status, leased := srv.call("POST", "/v1/worker/lease", map[string]any{"queues": []string{"emails"}, "worker_id": "w-1"})
	if status != http.StatusOK || len(leased["leases"].([]any)) != 1 {
		t.Fatalf("lease: %d %v", status, leased)
	}
	token := leased["leases"].([]any)[0].(map[string]any)["token"].(string)
	status, failed := srv.call("POST", "/v1/worker/jobs/"+id+"/fail", map[string]any{"token": token, "error": "smtp: 550 mailbox unavailable", "permanent": true})
	if status != http.StatusOK || failed["state"] != "failed" {
		t.Fatalf("fail: %d %v", status, failed)
	}
	// The job.failed event reaches the receiver and the delivery log.
	testutil.Eventually(t, "a delivery to reach the receiver", func() error {
		if received.Load() == 0 {
			return fmt.Errorf("none yet; server log:\n%s", srv.logs)
		}
		return nil
	})

	do(t, ctx, "sign in",
		chromedp.Navigate(srv.url+"/?refresh=0.3"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), adminToken),
		chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)),
		waitContains("#who", "Signed in as ops (admin)"),
	)
	do(t, ctx, "failed job page",
		chromedp.Navigate(srv.url+"/?refresh=0.3#/job/"+id),
		waitText("#job-state", "failed"),
		waitText(`#deliveries tbody tr:first-child td[data-col="subscription"]`, "audit"),
		waitText(`#deliveries tbody tr:first-child td[data-col="event"]`, "job.failed"),
		waitText(`#deliveries tbody tr:first-child td[data-col="outcome"]`, "delivered"),
		waitText(`#deliveries tbody tr:first-child td[data-col="status"]`, "204"),
		waitContains(`#attempts tbody tr:first-child td[data-col="error"]`, "550 mailbox unavailable"),
	)
	checkPage(t, ctx, 1280)
	do(t, ctx, "retry",
		chromedp.Click(chromedp.CSS("#retry-job")),
		chromedp.WaitVisible(chromedp.CSS("#confirm-ok")),
		waitContains("#confirm-message", "fresh attempts"),
		chromedp.Click(chromedp.CSS("#confirm-ok")),
		waitContains("#notice-text", "queued again: it is pending"),
		waitText("#job-state", "pending"),
		// The earlier attempt's error stays in the history.
		waitContains(`#attempts tbody tr:first-child td[data-col="error"]`, "550 mailbox unavailable"),
		waitJS(`!document.querySelector("#retry-job")`),
	)
	if _, job := srv.call("GET", "/v1/jobs/"+id, nil); job["state"] != "pending" || job["attempt"] != 0.0 {
		t.Errorf("job after retry: state %v attempt %v, want pending and 0", job["state"], job["attempt"])
	}

	row := `#queues tr[data-queue="emails"]`
	do(t, ctx, "pause",
		chromedp.Navigate(srv.url+"/?refresh=0.3#/overview"),
		waitText(row+` button[data-action="pause"]`, "Pause"),
		clickLive(row+` button[data-action="pause"]`),
		chromedp.WaitVisible(chromedp.CSS("#confirm-minutes")),
		chromedp.Click(chromedp.CSS("#confirm-ok")),
		waitContains("#notice-text", "Queue emails paused until resumed."),
		waitContains(row+" .paused", "paused until resumed"),
		waitText(row+` button[data-action="pause"]`, "Resume"),
	)
	// Paused: a worker gets nothing, though the retried job is pending.
	if _, l := srv.call("POST", "/v1/worker/lease", map[string]any{"queues": []string{"emails"}, "worker_id": "w-2"}); len(l["leases"].([]any)) != 0 {
		t.Errorf("leased %d jobs from a paused queue", len(l["leases"].([]any)))
	}
	do(t, ctx, "phone width, paused", chromedp.EmulateViewport(390, 844), chromedp.Navigate(srv.url+"/?refresh=0.3#/overview"),
		waitContains(row+" .paused", "paused until resumed"))
	checkPage(t, ctx, 390)
	do(t, ctx, "resume",
		chromedp.EmulateViewport(1280, 900),
		clickLive(row+` button[data-action="pause"]`),
		chromedp.WaitVisible(chromedp.CSS("#confirm-ok")),
		chromedp.Click(chromedp.CSS("#confirm-ok")),
		waitContains("#notice-text", "Queue emails resumed."),
		waitJS(fmt.Sprintf(`document.querySelector(%s).hidden`, jsString(row+" .paused"))),
		waitText(row+` button[data-action="pause"]`, "Pause"),
	)
	if _, l := srv.call("POST", "/v1/worker/lease", map[string]any{"queues": []string{"emails"}, "worker_id": "w-2"}); len(l["leases"].([]any)) != 1 {
		t.Errorf("leased %d jobs after resume, want the retried one", len(l["leases"].([]any)))
	}

	// At phone width the job page and its deliveries fit (tables scroll in
	// their own region).
	do(t, ctx, "phone width, job page", chromedp.EmulateViewport(390, 844), chromedp.Navigate(srv.url+"/?refresh=0.3#/job/"+id),
		waitText(`#deliveries tbody tr:first-child td[data-col="outcome"]`, "delivered"))
	checkPage(t, ctx, 390)
	do(t, ctx, "wide again", chromedp.EmulateViewport(1280, 900))

	// A producer token may cancel but is offered neither retry nor pause.
	cancelled := srv.enqueue("emails", "globex", "", 1)[0]
	if status, _ := srv.call("POST", "/v1/jobs/"+cancelled+"/cancel", nil); status != http.StatusOK {
		t.Fatalf("cancel: %d", status)
	}
	do(t, ctx, "producer",
		chromedp.Click(chromedp.CSS("#logout")),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), producerToken),
		chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)),
		waitContains("#who", "Signed in as shop (producer)"),
		chromedp.Navigate(srv.url+"/?refresh=0.3#/overview"),
		waitText(row+` td[data-col="cancelled"]`, "1"),
		waitJS(fmt.Sprintf(`!document.querySelector(%s)`, jsString(row+` button[data-action="pause"]`))),
		chromedp.Navigate(srv.url+"/?refresh=0.3#/job/"+cancelled),
		waitText("#job-state", "cancelled"),
		waitText(`#deliveries tbody tr:first-child td[data-col="event"]`, "job.cancelled"),
		waitJS(`!document.querySelector("#retry-job")`),
	)
	if e := errs(); len(e) > 0 {
		t.Errorf("page errors:\n%v", e)
	}
}
