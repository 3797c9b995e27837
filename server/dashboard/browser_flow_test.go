package dashboard_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
)

// The job page of a job in a flow draws the whole flow: every job a link
// with its state, the page's own job marked, and its parents and children
// listed; the drawing follows a parent's completion without a reload.
func TestBrowserFlowGraph(t *testing.T) {
	needBrowser(t)
	srv := startSluice(t, browserConfig, adminToken)
	ctx := browser(t, 1280, 900)
	errs := pageErrors(ctx)

	status, fl := srv.call("POST", "/v1/flows", map[string]any{
		"name": "site",
		"nodes": []any{
			map[string]any{"name": "crawl", "job": map[string]any{"queue": "web", "kind": "crawl"}},
			map[string]any{"name": "extract", "job": map[string]any{"queue": "web", "kind": "extract"}},
			map[string]any{"name": "summarise", "job": map[string]any{"queue": "web", "kind": "summarise"}},
		},
		"edges": []any{
			map[string]any{"parent": "crawl", "child": "extract"},
			map[string]any{"parent": "extract", "child": "summarise"},
		},
	})
	if status != http.StatusCreated {
		t.Fatalf("POST /v1/flows: %d %v", status, fl)
	}
	jobs := fl["jobs"].([]any)
	idOf := func(i int) string { return jobs[i].(map[string]any)["id"].(string) }
	crawl, extract := idOf(0), idOf(1)
	node := func(id string) string { return fmt.Sprintf(`#flow-graph a[data-job=%q]`, id) }
	do(t, ctx, "flow graph",
		chromedp.Navigate(srv.url+"/?refresh=0.3"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), adminToken),
		chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#logout")),
		chromedp.Navigate(srv.url+"/?refresh=0.3#/job/"+extract),
		waitText("#job-state", "blocked"),
		chromedp.WaitVisible(chromedp.CSS("#flow-graph")),
		waitJS(`document.querySelectorAll("#flow-graph a[data-job]").length === 3`),
		waitJS(`document.querySelectorAll("#flow-graph .fg-edge").length === 2`),
		waitJS(fmt.Sprintf(`document.querySelector(%s).classList.contains("fg-current")`, jsString(node(extract)))),
		waitJS(fmt.Sprintf(`document.querySelector(%s).classList.contains("s-pending")`, jsString(node(crawl)))),
		waitContains("#job-parents", crawl),
		waitContains("#job-children", "summarise"),
		waitContains("#job-flow", fl["id"].(string)),
	)
	// The crawl completes: extract is released, and the page follows.
	status, leased := srv.call("POST", "/v1/worker/lease", map[string]any{"queues": []string{"web"}, "worker_id": "w-1"})
	if status != http.StatusOK {
		t.Fatalf("lease: %d %v", status, leased)
	}
	token := leased["leases"].([]any)[0].(map[string]any)["token"].(string)
	if status, out := srv.call("POST", "/v1/worker/jobs/"+crawl+"/complete", map[string]any{"token": token}); status != http.StatusOK {
		t.Fatalf("complete: %d %v", status, out)
	}
	do(t, ctx, "released",
		waitText("#job-state", "pending"),
		waitJS(fmt.Sprintf(`document.querySelector(%s).classList.contains("s-completed")`, jsString(node(crawl)))),
		clickLive(node(crawl)),
		waitText("#job-state", "completed"),
		waitContains("#job-children", extract),
	)
	if e := errs(); len(e) > 0 {
		t.Fatalf("page errors: %v", e)
	}
}

// The job page of a finished job says why it ended: a failed job its
// error; a flow's job cancelled by its failed parent the reason, with a
// link to that parent, the job to retry.
func TestBrowserJobEnding(t *testing.T) {
	needBrowser(t)
	srv := startSluice(t, browserConfig, adminToken)
	ctx := browser(t, 1280, 900)
	errs := pageErrors(ctx)

	status, fl := srv.call("POST", "/v1/flows", map[string]any{
		"nodes": []any{
			map[string]any{"name": "crawl", "job": map[string]any{"queue": "web", "kind": "crawl", "max_attempts": 1}},
			map[string]any{"name": "extract", "job": map[string]any{"queue": "web", "kind": "extract"}},
		},
		"edges": []any{map[string]any{"parent": "crawl", "child": "extract"}},
	})
	if status != http.StatusCreated {
		t.Fatalf("POST /v1/flows: %d %v", status, fl)
	}
	jobs := fl["jobs"].([]any)
	crawl, extract := jobs[0].(map[string]any)["id"].(string), jobs[1].(map[string]any)["id"].(string)
	status, leased := srv.call("POST", "/v1/worker/lease", map[string]any{"queues": []string{"web"}, "worker_id": "w-1"})
	if status != http.StatusOK {
		t.Fatalf("lease: %d %v", status, leased)
	}
	token := leased["leases"].([]any)[0].(map[string]any)["token"].(string)
	if status, out := srv.call("POST", "/v1/worker/jobs/"+crawl+"/fail", map[string]any{"token": token, "error": "site down"}); status != http.StatusOK {
		t.Fatalf("fail: %d %v", status, out)
	}
	do(t, ctx, "cancelled child",
		chromedp.Navigate(srv.url+"/?refresh=0.3"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), adminToken),
		chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#logout")),
		chromedp.Navigate(srv.url+"/?refresh=0.3#/job/"+extract),
		waitText("#job-state", "cancelled"),
		waitContains("#job-ending", "It was cancelled: parent job "+crawl+" failed"),
		waitContains("#job-ending-parent", "job "+crawl),
		clickLive("#job-ending-parent"),
		waitText("#job-state", "failed"),
		waitContains("#job-ending", "It failed: site down"),
	)
	if e := errs(); len(e) > 0 {
		t.Fatalf("page errors: %v", e)
	}
}
