package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

const e2eBudgetConfig = `
budgets:
  definitions:
    openai:
      requests: {quota: 500, window: 1m}
      units:
        tokens: {quota: 200000, window: 1m}
      in_flight: 50
      per_tenant:
        requests: {quota: 60, window: 1m}
  queue_claims:
    summarise: {openai: {tokens: 1200}}
`

// sluice serve keeps the file's budgets; the CLI lists them, shows a
// tenant's limits and closes one for the fleet; a job on the closed
// budget waits and `sluice job get` says what holds it.
func TestServeBudgets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "sluice.yaml"), e2eBudgetConfig)
	p := start(t, dir, nil)
	sluice := cli(t, p.url)
	out, code := sluice("budget", "list")
	if code != 0 || !strings.Contains(out, "openai") || !strings.Contains(out, "tokens") || !strings.Contains(out, "200000") {
		t.Fatalf("budget list: %d %s", code, out)
	}
	out, code = sluice("budget", "get", "openai", "--tenant", "acme")
	if code != 0 || !strings.Contains(out, "tenant") || !strings.Contains(out, "60") {
		t.Errorf("budget get --tenant: %d %s", code, out)
	}
	out, code = sluice("budget", "close", "openai", "--for", "30s")
	if code != 0 || !strings.HasPrefix(out, "budget openai closed until ") {
		t.Errorf("budget close: %d %s", code, out)
	}
	if out, code := sluice("budget", "list"); code != 0 || !strings.Contains(out, "closed") {
		t.Errorf("budget list after a close: %d %s; want the closure shown", code, out)
	}
	// A job on the closed budget is held, not handed out, and says why.
	post := func(path, body string) map[string]any {
		t.Helper()
		resp, err := http.Post(p.url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode >= 300 {
			t.Fatalf("POST %s: %d %v", path, resp.StatusCode, err)
		}
		return out
	}
	id := post("/v1/jobs", `{"queue":"summarise","kind":"k"}`)["job"].(map[string]any)["id"].(string)
	if got := post("/v1/worker/lease", `{"queues":["summarise"],"worker_id":"w"}`)["leases"].([]any); len(got) != 0 {
		t.Fatalf("leased %v from a closed budget, want nothing", got)
	}
	if out, code := sluice("job", "get", id); code != 0 || !strings.Contains(out, "held: budget openai: closed for") || !strings.Contains(out, "attempt 0/") {
		t.Errorf("job get of a held job: %d %s; want the hold named, no attempt spent", code, out)
	}
	if out, code := sluice("budget", "get", "nope"); code == 0 || !strings.Contains(out, "unknown budget") {
		t.Errorf("budget get of an unknown budget: %d %s", code, out)
	}
	if out, code := sluice("budget", "close", "openai"); code == 0 || !strings.Contains(out, "exactly one of --for and --until") {
		t.Errorf("budget close without a time: %d %s", code, out)
	}
}
