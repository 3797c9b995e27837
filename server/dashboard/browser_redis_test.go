package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"
)

// TestBrowserTenantsOnRedis runs the binary on Redis storage and checks
// that the tenant table fills from GET /v1/tenants there: counts from the
// scheduler, and a tenant known only by its settings; and that a paused
// queue without jobs stays on the overview. It needs a Redis
// (SLUICE_REDIS_URL); its keys get a prefix of their own, deleted after.
func TestBrowserTenantsOnRedis(t *testing.T) {
	url := os.Getenv("SLUICE_REDIS_URL")
	if url == "" {
		t.Skip("SLUICE_REDIS_URL not set: skipping the dashboard on Redis storage")
	}
	needBrowser(t)
	prefix := fmt.Sprintf("dash%d:", time.Now().UnixNano())
	t.Cleanup(func() { deleteKeys(t, url, prefix) })
	srv := startSluice(t, browserConfig+"storage:\n  prefix: \""+prefix+"\"\n", adminToken, "--redis-url", url)
	ctx := browser(t, 1280, 900)

	srv.enqueue("emails", "acme", "", 3)
	srv.enqueue("emails", "globex", "", 1)
	if status, out := srv.call("PUT", "/v1/tenants/initech/limit", map[string]any{"concurrency": 3}); status != http.StatusOK {
		t.Fatalf("set limit: %d %v", status, out)
	}
	if status, out := srv.call("GET", "/v1/tenants?order=busiest", nil); status != http.StatusOK || len(out["tenants"].([]any)) != 3 {
		t.Fatalf("GET /v1/tenants: %d %v; want 3 tenants", status, out)
	}
	// The list is Redis's: its registry of tenants holds the three.
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rc := redis.NewClient(opts)
	defer rc.Close()
	if n, err := rc.ZCard(context.Background(), prefix+"sched:tenants").Result(); err != nil || n != 3 {
		t.Fatalf("Redis tenant registry holds %d, %v; want 3", n, err)
	}
	row := func(tenant, col string) string {
		return fmt.Sprintf(`#tenants tbody tr[data-tenant=%q] td[data-col=%q]`, tenant, col)
	}
	do(t, ctx, "sign in",
		chromedp.Navigate(srv.url+"/?refresh=0.3"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), adminToken),
		chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#logout")),
	)
	do(t, ctx, "tenant table",
		chromedp.Click(chromedp.CSS(`nav a[data-view="tenants"]`)),
		waitText(row("acme", "pending"), "3"),
		waitText(row("globex", "pending"), "1"),
		waitText(`#tenants tbody tr:first-child td[data-col="tenant"]`, "acme"),
		// initech has no jobs: only the tenant list knows it.
		waitText(row("initech", "limit"), "3"),
		waitText(row("initech", "total"), "0"),
	)
	// A queue paused before its first job is on the overview: Redis lists
	// it from its queue registry, which the pause joins.
	if status, out := srv.call("POST", "/v1/queues/idle/pause", nil); status != http.StatusOK {
		t.Fatalf("pause idle: %d %v", status, out)
	}
	do(t, ctx, "paused empty queue",
		chromedp.Click(chromedp.CSS(`nav a[data-view="overview"]`)),
		waitContains(`#queues tr[data-queue="idle"] .paused`, "paused until resumed"),
		waitText(`#queues tr[data-queue="idle"] .total`, "0 jobs"),
		waitText(`#queues tr[data-queue="emails"] .total`, "4 jobs"),
	)
}

// deleteKeys deletes the keys under prefix (never the whole database).
func deleteKeys(t *testing.T, url, prefix string) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Error(err)
		return
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx := context.Background()
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		c.Del(ctx, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Error(err)
	}
}
