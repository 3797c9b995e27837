package main

import (
	"bytes"
	"errors"
	"os/exec"
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
`

// sluice serve keeps the file's budgets; the CLI lists them, shows a
// tenant's limits and closes one for the fleet.
func TestServeBudgets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "sluice.yaml"), e2eBudgetConfig)
	p := start(t, dir, nil)
	sluice := func(args ...string) (string, int) {
		cmd := exec.Command(binary, append([]string{"--server", p.url}, args...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out.String(), ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return out.String(), 0
	}
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
	if out, code := sluice("budget", "get", "nope"); code == 0 || !strings.Contains(out, "unknown budget") {
		t.Errorf("budget get of an unknown budget: %d %s", code, out)
	}
	if out, code := sluice("budget", "close", "openai"); code == 0 || !strings.Contains(out, "exactly one of --for and --until") {
		t.Errorf("budget close without a time: %d %s", code, out)
	}
}
