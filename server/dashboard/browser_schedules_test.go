package dashboard_test

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
)

// scheduleConfig has an admin token and a schedule from the file.
const scheduleConfig = `
auth:
  tokens:
    - {name: ops, token: "` + adminToken + `", roles: [admin]}
schedules:
  - name: nightly-report
    cron: "30 2 * * *"
    time_zone: Europe/Berlin
    job: {queue: reports, kind: report}
`

// TestBrowserSchedules lists the file's schedule and one set through the
// API, pauses and resumes one, and runs one now, seeing its job as the
// last run — in real headless Chromium against the real binary.
func TestBrowserSchedules(t *testing.T) {
	needBrowser(t)
	srv := startSluice(t, scheduleConfig, adminToken)
	status, out := srv.call("PUT", "/v1/schedules/heartbeat", map[string]any{
		"every_ms": 3600000, "job": map[string]any{"queue": "ops", "kind": "ping"},
	})
	if status != http.StatusOK {
		t.Fatalf("PUT schedule: %d %v", status, out)
	}
	ctx := browser(t, 1280, 900)
	errs := pageErrors(ctx)
	row := func(name string) string { return `#schedules tr[data-schedule="` + name + `"]` }
	do(t, ctx, "sign in and open schedules",
		chromedp.Navigate(srv.url+"/?refresh=0.3"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), adminToken),
		chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#logout")),
		chromedp.Navigate(srv.url+"/?refresh=0.3#/schedules"),
		waitContains("h1", "Schedules"),
		waitText(row("nightly-report")+` td[data-col="source"]`, "config"),
		waitContains(row("nightly-report")+` td[data-col="when"]`, "30 2 * * * (Europe/Berlin)"),
		waitText(row("heartbeat")+` td[data-col="source"]`, "api"),
		waitContains(row("heartbeat")+` td[data-col="when"]`, "every 1h"),
		waitText(row("heartbeat")+` td[data-col="last"]`, "never"),
	)
	checkPage(t, ctx, 1280)
	do(t, ctx, "pause and resume",
		clickLive(row("nightly-report")+` button[data-action="pause"]`),
		waitContains("#notice-text", "Schedule nightly-report paused."),
		waitText(row("nightly-report")+` td[data-col="next"]`, "paused"),
		clickLive(row("nightly-report")+` button[data-action="resume"]`),
		waitContains("#notice-text", "Schedule nightly-report resumed."),
		waitJS(`!document.querySelector(`+jsString(row("nightly-report")+` td[data-col="next"]`)+`).textContent.includes("paused")`),
	)
	do(t, ctx, "run now",
		clickLive(row("heartbeat")+` button[data-action="trigger"]`),
		chromedp.WaitVisible(chromedp.CSS("#confirm-ok")),
		waitContains("#confirm-message", "One ping job is enqueued on ops"),
		chromedp.Click(chromedp.CSS("#confirm-ok")),
		waitContains("#notice-text", "Enqueued job "),
		waitContains(row("heartbeat")+` td[data-col="last"]`, "pending"),
	)
	if _, s := srv.call("GET", "/v1/schedules/heartbeat", nil); s["last_run"] == nil {
		t.Errorf("heartbeat after run now: no last run")
	}
	if e := errs(); len(e) > 0 {
		t.Errorf("page errors: %v", e)
	}
}
