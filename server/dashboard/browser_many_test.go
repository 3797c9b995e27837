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

// manyConfig has 60 policies: 58 in three scenes, and two whose quotas a
// double cannot hold: 1234567890123456789 (JSON.parse makes it
// ...800) and MaxInt64, which limits nothing.
func manyConfig() string {
	var b strings.Builder
	b.WriteString("auth:\n  tokens:\n    - {name: ops, token: \"" + adminToken + "\", roles: [admin]}\nlimits:\n  scenes:\n")
	for i, sc := range []string{"ip", "member", "team"} {
		fmt.Fprintf(&b, "    %s:\n      subject: [id]\n      policies:\n", sc)
		for p := range []int{20, 20, 18}[i] {
			fmt.Fprintf(&b, "        p%02d: {limits: [{quota: %d, window: 60s}]}\n", p, 10+p)
		}
	}
	b.WriteString("    big:\n      subject: [id]\n      policies:\n" +
		"        huge: {limits: [{quota: 1234567890123456789, window: 60s}]}\n" +
		"        open: {limits: [{quota: 9223372036854775807, window: 1s}]}\n")
	return b.String()
}

// TestBrowserManyQueuesAndPolicies fills the overview with 60 queues
// (one of them paused and empty) and the rate-limit view with 60
// policies: both are tables a filter box narrows, they fit a phone's
// width, a single job is "1 job", and quotas beyond 2^53 read exactly
// (or "no limit").
func TestBrowserManyQueuesAndPolicies(t *testing.T) {
	needBrowser(t)
	srv := startSluice(t, manyConfig(), adminToken)
	// q-00 holds one job, the others two to five; idle has none and is
	// paused, which must not hide it.
	var jobs []map[string]any
	for i := range 59 {
		n := 2 + i%4
		if i == 0 {
			n = 1
		}
		for range n {
			jobs = append(jobs, map[string]any{"queue": fmt.Sprintf("q-%02d", i), "kind": "k"})
		}
	}
	if status, out := srv.call("POST", "/v1/jobs/batch", map[string]any{"jobs": jobs}); status != http.StatusCreated {
		t.Fatalf("enqueue: %d %v", status, out)
	}
	if status, out := srv.call("POST", "/v1/queues/idle/pause", nil); status != http.StatusOK {
		t.Fatalf("pause idle: %d %v", status, out)
	}
	ctx := browser(t, 1280, 900)
	errs := pageErrors(ctx)
	visible := func(table string) string {
		return fmt.Sprintf(`document.querySelectorAll("#%s tbody tr[data-%s]:not([hidden])").length`, table, map[string]string{"queues": "queue", "policies": "policy"}[table])
	}
	do(t, ctx, "sign in",
		chromedp.Navigate(srv.url+"/?refresh=0.3"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), adminToken),
		chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#logout")),
	)
	do(t, ctx, "60 queues",
		waitJS(visible("queues")+` === 60`),
		waitText("#queues-count", "60 queues"),
		waitText(`#queues tr[data-queue="q-00"] .total`, "1 job"),
		waitText(`#queues tr[data-queue="q-01"] .total`, "3 jobs"),
		waitText(`#queues tr[data-queue="q-00"] td[data-col="pending"]`, "1"),
		waitContains(`#queues tr[data-queue="idle"] .paused`, "paused until resumed"),
		waitText(`#queues tr[data-queue="idle"] .total`, "0 jobs"),
		waitText(`#queues tr[data-queue="idle"] button[data-action="pause"]`, "Resume"),
		waitJS(`document.querySelectorAll('#queues tbody tr[data-queue] svg.spark').length === 120`),
	)
	do(t, ctx, "filter queues",
		chromedp.SendKeys(chromedp.CSS("#queues-filter"), "q-1"),
		waitJS(visible("queues")+` === 10`), // q-10 to q-19
		waitText("#queues-count", "10 of 60 queues shown"),
		waitJS(`location.hash === "#/overview?filter=q-1"`),
		// Refreshes keep the filter, the rows it hides and the focus.
		waitJS(`(window.__updated = document.querySelector("#updated").textContent, true)`),
		waitJS(`document.querySelector("#updated").textContent !== window.__updated`),
		waitJS(visible("queues")+` === 10 && document.querySelector("#queues-filter") === document.activeElement`),
		chromedp.SendKeys(chromedp.CSS("#queues-filter"), "x"),
		waitText(`#queues tbody tr.note-row`, "No queue name contains “q-1x”."),
	)
	do(t, ctx, "charts of one queue",
		chromedp.Navigate(srv.url+"/?refresh=0.3#/overview?filter=q-0"),
		waitJS(visible("queues")+` === 10`),
		clickLive(`#queues tr[data-queue="q-03"] button[data-action="charts"]`),
		waitJS(`!document.querySelector('#queues tr[data-charts="q-03"]').hidden && document.querySelectorAll('#queues tr[data-charts="q-03"] svg.chart').length === 2`),
		// Sorting by pending puts the fullest queue first.
		clickLive(`#queues th:nth-child(2) button`),
		waitJS(`document.querySelector("#queues tbody tr[data-queue]:not([hidden])").dataset.queue === "q-03"`),
		waitJS(`document.querySelector('#queues tr[data-queue="q-03"]').nextElementSibling.dataset.charts === "q-03"`),
	)
	do(t, ctx, "one job in the list",
		chromedp.Navigate(srv.url+"/?refresh=0.3#/jobs?queue=q-00"),
		waitContains("#jobs caption", "1 job (queue q-00)"),
	)
	checkNoOverflow(t, ctx, srv.url+"/?refresh=0.3#/overview", `#queues tr[data-queue="idle"] .paused:not([hidden])`)

	do(t, ctx, "60 policies",
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(srv.url+"/?refresh=0.3#/limits"),
		waitJS(visible("policies")+` === 60`),
		waitText("#policies-count", "60 policies"),
		waitJS(`document.querySelectorAll("#policies tbody tr.group:not([hidden])").length === 4`),
		waitContains(`#policies tr[data-policy="big/huge"] td[data-col="policy"]`, "1,234,567,890,123,456,789 per 60s"),
		waitContains(`#policies tr[data-policy="big/open"] td[data-col="policy"]`, "no limit (1s, fixed-window)"),
	)
	do(t, ctx, "filter policies",
		chromedp.SendKeys(chromedp.CSS("#policies-filter"), "member/"),
		waitJS(visible("policies")+` === 20`),
		waitJS(`document.querySelectorAll("#policies tbody tr.group:not([hidden])").length === 1`),
		waitText("#policies-count", "20 of 60 policies shown"),
	)
	do(t, ctx, "a decision against a huge quota",
		chromedp.SetValue(chromedp.CSS("#try-scene"), "big"),
		waitJS(`(document.querySelector("#try-scene").dispatchEvent(new Event("change")), true)`),
		chromedp.SetValue(chromedp.CSS("#try-policy"), "huge"),
		chromedp.SendKeys(chromedp.CSS("#try-subject-id"), "u-1"),
		chromedp.Click(chromedp.CSS("#try-submit")),
		waitContains("#try-verdict", "1 used, 1,234,567,890,123,456,788 left"),
		waitText(`#policies tr[data-policy="big/huge"] td[data-col="allowed"]`, "1"),
	)
	checkParseJSON(t, ctx)
	checkNoOverflow(t, ctx, srv.url+"/?refresh=0.3#/limits", `#policies tr[data-policy="big/open"]`)
	if e := errs(); len(e) > 0 {
		t.Errorf("page errors:\n%v", e)
	}
}

// checkNoOverflow loads url at phone width and checks that the page (and
// its body) is no wider than the screen: wide tables scroll in their own
// region.
func checkNoOverflow(t *testing.T, ctx context.Context, url, ready string) {
	t.Helper()
	do(t, ctx, "phone width "+url, chromedp.EmulateViewport(390, 844), chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(ready)))
	checkPage(t, ctx, 390)
	if wide := evalString(t, ctx, `document.body.scrollWidth > innerWidth ? "body is " + document.body.scrollWidth + " px wide in " + innerWidth : ""`); wide != "" {
		t.Errorf("at 390 px: %s", wide)
	}
}

// checkParseJSON runs the dashboard's own JSON reader in the page on the
// cases that matter: integers past 2^53 exact (as BigInt), everything
// else as JSON.parse reads it, and the same text written back.
func checkParseJSON(t *testing.T, ctx context.Context) {
	t.Helper()
	const script = `import("/ui/api.js").then((m) => {
		const text = '{"max":9223372036854775807,"neg":-9007199254740993,"safe":9007199254740991,' +
			'"str":"9223372036854775807 \\" 9223372036854775807","float":12345678901234567.5,"exp":1e+30,' +
			'"frac":0.12345678901234567891,"list":[18446744073709551615]}';
		const v = m.parseJSON(text);
		return [typeof v.max, String(v.max), String(v.neg), typeof v.safe, v.str, typeof v.float, typeof v.exp,
			typeof v.frac, String(v.list[0]), m.stringifyJSON({ max: v.max, s: "a" })].join("|");
	})`
	got := evalString(t, ctx, script, chromedp.EvalAwaitPromise)
	want := `bigint|9223372036854775807|-9007199254740993|number|9223372036854775807 " 9223372036854775807|number|number|number|18446744073709551615|{"max":9223372036854775807,"s":"a"}`
	if got != want {
		t.Errorf("parseJSON in the page:\n got %s\nwant %s", got, want)
	}
}

// evalString evaluates expr in the page.
func evalString(t *testing.T, ctx context.Context, expr string, opts ...chromedp.EvaluateOption) string {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(sctx, chromedp.Evaluate[string](expr, opts...))
	if err != nil {
		t.Fatalf("evaluate %.60s: %v", expr, err)
	}
	return s
}
