package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

const adminToken = "dashboard-admin-token-0001"

const browserConfig = `
auth:
  tokens:
    - {name: ops, token: "` + adminToken + `", roles: [admin]}
limits:
  scenes:
    api:
      subject: [user]
      policies:
        call: {limits: [{quota: 2, window: 60s}]}
`

// TestBrowser signs in, watches counts and the tenant table follow jobs
// enqueued over HTTP, cancels a job from its page, and sees a rate-limit
// denial in the limits view — in real headless Chromium against the real
// binary.
func TestBrowser(t *testing.T) {
	needBrowser(t)
	srv := startSluice(t, browserConfig, adminToken)
	ctx := browser(t, 1280, 900)
	errs := pageErrors(ctx)

	do(t, ctx, "sign in",
		chromedp.Navigate(srv.url+"/?refresh=0.3"),
		chromedp.WaitVisible(chromedp.CSS("#login-form")),
		chromedp.SendKeys(chromedp.CSS("#token"), "not-the-token-at-all"),
		chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)),
		waitContains("#login-error", "rejected this token (401)"),
		waitJS(`(document.querySelector("#token").value = "", true)`), // clear the field
		chromedp.SendKeys(chromedp.CSS("#token"), adminToken),
		chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#logout")),
		waitContains("h1", "Overview"),
	)

	srv.enqueue("emails", "acme", "", 3)
	globex := srv.enqueue("emails", "globex", "", 2)
	do(t, ctx, "overview counts",
		waitText(`#queues tr[data-queue="emails"] td[data-col="pending"]`, "5"),
	)
	// Counts follow new jobs without a reload.
	srv.enqueue("emails", "acme", "", 2)
	do(t, ctx, "overview update", waitText(`#queues tr[data-queue="emails"] td[data-col="pending"]`, "7"))

	// A worker takes acme's oldest job: the tenant table shows it active.
	status, leased := srv.call("POST", "/v1/worker/lease", map[string]any{"queues": []string{"emails"}, "worker_id": "w-1"})
	if status != http.StatusOK {
		t.Fatalf("lease: %d %v", status, leased)
	}
	active := leased["leases"].([]any)[0].(map[string]any)["job"].(map[string]any)["id"].(string)
	row := func(tenant, col string) string {
		return fmt.Sprintf(`#tenants tbody tr[data-tenant=%q] td[data-col=%q]`, tenant, col)
	}
	// A tenant with settings and no jobs is known only to GET /v1/tenants:
	// its row shows that the table comes from the tenant list.
	if status, out := srv.call("PUT", "/v1/tenants/initech/limit", map[string]any{"concurrency": 3}); status != http.StatusOK {
		t.Fatalf("set limit: %d %v", status, out)
	}
	do(t, ctx, "tenant table",
		chromedp.Click(chromedp.CSS(`nav a[data-view="tenants"]`)),
		waitText(row("acme", "active"), "1"),
		waitText(row("acme", "pending"), "4"),
		waitText(row("globex", "pending"), "2"),
		waitText(`#tenants tbody tr:first-child td[data-col="tenant"]`, "acme"), // busiest first
		// acme has no limit set; initech's comes with the list.
		waitText(row("acme", "limit"), "none"),
		waitText(row("initech", "limit"), "3"),
		waitText(row("initech", "total"), "0"),
		waitText(`#tenants tbody tr:last-child td[data-col="tenant"]`, "initech"),
	)
	later := srv.enqueue("emails", "globex", "", 3)
	do(t, ctx, "tenant table update", waitText(row("globex", "pending"), "5"))

	// Sorting by a column reorders the rows.
	do(t, ctx, "sort by pending",
		clickLive(`#tenants th:nth-child(6) button`),
		waitText(`#tenants tbody tr:first-child td[data-col="tenant"]`, "globex"),
	)

	// The jobs view filters by tenant on the server, newest first.
	do(t, ctx, "tenant filter",
		chromedp.Click(chromedp.CSS(`nav a[data-view="jobs"]`)),
		chromedp.WaitVisible(chromedp.CSS("#f-tenant")),
		chromedp.SendKeys(chromedp.CSS("#f-tenant"), "globex"),
		chromedp.Click(chromedp.CSS(`#job-filter button[type="submit"]`)),
		waitJS(`document.querySelectorAll("#jobs tbody tr[data-job]").length === 5`),
		waitJS(`[...document.querySelectorAll('#jobs tbody td[data-col="tenant"]')].every((td) => td.textContent === "globex")`),
		waitJS(fmt.Sprintf(`document.querySelector("#jobs tbody tr:first-child").dataset.job === %q`, later[2])),
		waitContains("#jobs caption", "(tenant globex), newest first"),
	)

	// Cancel one of globex's jobs from its page.
	id := globex[0]
	do(t, ctx, "job page",
		chromedp.Navigate(srv.url+"/?refresh=0.3#/jobs?tenant=globex"),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#jobs a[href="#/job/%s"]`, id))),
		clickLive(fmt.Sprintf(`#jobs a[href="#/job/%s"]`, id)),
		waitText("#job-state", "pending"),
		waitContains("#job-payload-json", `"template": "welcome"`),
		chromedp.Click(chromedp.CSS("#cancel-job")),
		chromedp.WaitVisible(chromedp.CSS("#confirm-ok")),
		chromedp.Click(chromedp.CSS("#confirm-ok")),
		waitText("#job-state", "cancelled"),
		waitContains("#notice-text", "cancelled"),
	)
	if _, job := srv.call("GET", "/v1/jobs/"+id, nil); job["state"] != "cancelled" {
		t.Errorf("job %s after cancel = %v, want cancelled", id, job["state"])
	}
	// The leased job's page names its lease holder and the running attempt.
	do(t, ctx, "active job page",
		chromedp.Navigate(srv.url+"/?refresh=0.3#/job/"+active),
		waitText("#job-state", "active"),
		waitText("#lease-holder", "w-1"),
		waitText(`#attempts tbody tr:first-child td[data-col="outcome"]`, "active"),
	)

	// Three calls against a quota of 2: the third is denied, and the
	// limits view shows the denial.
	do(t, ctx, "try a decision",
		chromedp.Click(chromedp.CSS(`nav a[data-view="limits"]`)),
		chromedp.WaitVisible(chromedp.CSS("#try-subject-user")),
		chromedp.SendKeys(chromedp.CSS("#try-subject-user"), "u-42"),
	)
	for i, allowed := range []string{"true", "true", "false"} {
		do(t, ctx, fmt.Sprintf("decision %d", i+1),
			chromedp.Click(chromedp.CSS("#try-submit")),
			waitJS(fmt.Sprintf(`document.querySelectorAll("#try-verdict").length === 1 && document.querySelector("#try-verdict").dataset.allowed === %q && !window.__seen%d && (window.__seen%d = true)`, allowed, i, i)),
		)
	}
	do(t, ctx, "limits view",
		waitContains("#try-verdict", "HTTP 429"),
		waitText(`#policies tr[data-policy="api/call"] td[data-col="denied"]`, "1"),
		waitText(`#policies tr[data-policy="api/call"] td[data-col="allowed"]`, "2"),
	)
	// A denial from another client shows up too.
	if status, _ := srv.call("POST", "/v1/limits/api/call", map[string]any{"subject": map[string]any{"user": "u-42"}}); status != http.StatusTooManyRequests {
		t.Fatalf("limit over HTTP: %d, want 429", status)
	}
	do(t, ctx, "limits update", waitText(`#policies tr[data-policy="api/call"] td[data-col="denied"]`, "2"))

	// Inspect reads u-42's counters; Reset asks first, does nothing when
	// the operator declines, and forgets them when confirmed (audited).
	do(t, ctx, "inspect",
		chromedp.Click(chromedp.CSS("#try-inspect")),
		waitContains("#try-inspection", "2 used, 0 left"),
		waitJS(`(window.confirm = (m) => (window.__asked = m, false), true)`),
		chromedp.Click(chromedp.CSS("#try-reset")),
		waitJS(`String(window.__asked).includes("Reset every counter and lease of api/call")`),
		waitJS(`(document.querySelector("#try-result").replaceChildren(), true)`),
		chromedp.Click(chromedp.CSS("#try-inspect")),
		waitContains("#try-inspection", "2 used, 0 left"),
	)
	do(t, ctx, "reset",
		waitJS(`(window.confirm = () => true, true)`),
		chromedp.Click(chromedp.CSS("#try-reset")),
		waitContains("#try-reset-done", "1 counters and leases removed"),
		chromedp.Click(chromedp.CSS("#try-inspect")),
		waitContains("#try-inspection", "0 used, 2 left"),
	)
	if !strings.Contains(srv.logs.String(), "limits: counters reset") {
		t.Errorf("no audit line for the reset in the log:\n%s", srv.logs)
	}

	checkPage(t, ctx, 1280)
	do(t, ctx, "phone width", chromedp.EmulateViewport(390, 844), chromedp.Navigate(srv.url+"/?refresh=0.3#/overview"),
		waitText(`#queues tr[data-queue="emails"] td[data-col="cancelled"]`, "1"))
	checkPage(t, ctx, 390)

	if e := errs(); len(e) > 0 {
		t.Errorf("page errors:\n%v", e)
	}
}

// checkPage checks what can be checked mechanically: nothing wider than
// the screen, a label for every form control, one h1, a main landmark.
func checkPage(t *testing.T, ctx context.Context, width int) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	problems, err := chromedp.Run(sctx, chromedp.Evaluate[[]string](`(() => {
		const out = [];
		if (document.documentElement.scrollWidth > innerWidth) out.push("page is " + document.documentElement.scrollWidth + " px wide in a " + innerWidth + " px window");
		for (const el of document.querySelectorAll("input, select, textarea")) {
			if (el.type === "hidden" || el.closest("dialog:not([open])")) continue;
			if (!el.labels.length && !el.getAttribute("aria-label")) out.push("no label: " + el.outerHTML);
		}
		if (document.querySelectorAll("main h1").length !== 1) out.push("want one h1 in main");
		if (!document.querySelector("main") || !document.querySelector("nav[aria-label]")) out.push("missing landmarks");
		return out;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("at %d px: %s", width, p)
	}
}
