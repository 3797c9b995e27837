package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const opsConfig = `
limits:
  scenes:
    team:
      subject: [team]
      policies:
        export:
          limits: [{quota: 100, window: 1h}]
          in_flight: {max: 1, ttl: 30s}
        send: {limits: [{quota: 1, window: 500ms, algorithm: token-bucket, burst: 1}]}
        hourly: {limits: [{quota: 1, window: 1h, algorithm: token-bucket, burst: 1}]}
        batch: {limits: [{quota: 5, window: 1h}]}
`

// limitRun is a finished client command: its output, exit code and the
// output parsed as JSON when it is JSON.
type limitRun struct {
	out  string
	code int
	body map[string]any
}

// limitCLI returns a runner of the sluice client against p.
func limitCLI(t *testing.T, p *proc) func(args ...string) limitRun {
	return func(args ...string) limitRun {
		t.Helper()
		cmd := exec.Command(binary, append([]string{"--server", p.url}, args...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		r := limitRun{}
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			r.code = ee.ExitCode()
		case err != nil:
			t.Fatal(err)
		}
		r.out = out.String()
		_ = json.Unmarshal(out.Bytes(), &r.body)
		return r
	}
}

func TestClientAcquireReleaseInspectReset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "sluice.yaml"), opsConfig)
	sluice := limitCLI(t, start(t, dir, nil))

	first := sluice("limit", "acquire", "team", "export", "team=a")
	lease, _ := first.body["lease"].(map[string]any)
	if first.code != 0 || first.body["allowed"] != true || lease["id"] == nil {
		t.Fatalf("acquire: %d %s", first.code, first.out)
	}
	if r := sluice("limit", "acquire", "team", "export", "team=a"); r.code != 2 || r.body["allowed"] != false {
		t.Fatalf("acquire over the in-flight limit: %d %s, want exit code 2", r.code, r.out)
	}
	if r := sluice("limit", "release", "team", "export", lease["id"].(string), "team=a"); r.code != 0 || r.body["released"] != true {
		t.Fatalf("release: %d %s", r.code, r.out)
	}
	if r := sluice("limit", "release", "team", "export", lease["id"].(string), "team=a"); r.code != 0 || r.body["released"] != false {
		t.Errorf("release twice: %d %s, want released false", r.code, r.out)
	}
	if r := sluice("limit", "acquire", "team", "export", "team=a"); r.code != 0 {
		t.Fatalf("acquire after release: %d %s", r.code, r.out)
	}
	ins := sluice("limit", "inspect", "team", "export", "team=a")
	inFlight, _ := ins.body["in_flight"].(map[string]any)
	if ins.code != 0 || inFlight["held"] != float64(1) || limitRemaining(ins.body) != 98 {
		t.Fatalf("inspect: %d %s, want 1 held and 98 of 100 left", ins.code, ins.out)
	}
	if r := sluice("limit", "reset", "team", "export", "team=a"); r.code != 0 || r.body["removed"] != float64(2) {
		t.Fatalf("reset: %d %s, want 2 removed (the window counter and the lease)", r.code, r.out)
	}
	ins = sluice("limit", "inspect", "team", "export", "team=a")
	inFlight, _ = ins.body["in_flight"].(map[string]any)
	if inFlight["held"] != float64(0) || limitRemaining(ins.body) != 100 {
		t.Errorf("inspect after reset: %s, want nothing held and 100 left", ins.out)
	}
	if r := sluice("limit", "acquire", "team", "export"); r.code != 1 {
		t.Errorf("acquire without a subject: %d %s, want exit code 1", r.code, r.out)
	}
	if r := sluice("limit", "release", "team", "export", "team=a"); r.code != 1 || !strings.Contains(r.out, "requires at least 4 arg") {
		t.Errorf("release without a lease id: %d %s, want a usage error", r.code, r.out)
	}
}

func TestClientOverrides(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "sluice.yaml"), opsConfig)
	sluice := limitCLI(t, start(t, dir, nil))

	if r := sluice("limit", "override", "set", "team", "batch", "team=b", "--limit", "1/1h"); r.code != 0 {
		t.Fatalf("override set: %d %s", r.code, r.out)
	}
	if r := sluice("limit", "consume", "team", "batch", "team=b"); r.code != 0 {
		t.Fatalf("first call under the override: %d %s", r.code, r.out)
	}
	if r := sluice("limit", "consume", "team", "batch", "team=b"); r.code != 2 {
		t.Fatalf("second call under an override of 1: %d %s, want exit code 2", r.code, r.out)
	}
	if r := sluice("limit", "override", "set", "team", "batch", "team=vip", "--unlimited"); r.code != 0 {
		t.Fatalf("override set --unlimited: %d %s", r.code, r.out)
	}
	for range 6 {
		if r := sluice("limit", "consume", "team", "batch", "team=vip"); r.code != 0 {
			t.Fatalf("unlimited subject: %d %s", r.code, r.out)
		}
	}
	list := sluice("limit", "override", "list")
	overrides, _ := list.body["overrides"].([]any)
	if list.code != 0 || len(overrides) != 2 {
		t.Fatalf("override list: %d %s, want 2 overrides", list.code, list.out)
	}
	if r := sluice("limit", "override", "delete", "team", "batch", "team=b"); r.code != 0 || r.body["deleted"] != true {
		t.Fatalf("override delete: %d %s", r.code, r.out)
	}
	if r := sluice("limit", "consume", "team", "batch", "team=b"); r.code != 0 {
		t.Errorf("after delete the policy's 5 apply: %d %s", r.code, r.out)
	}
	if r := sluice("limit", "override", "set", "team", "batch", "team=c", "--limit", "x/1h"); r.code != 1 || !strings.Contains(r.out, "quota must be an integer") {
		t.Errorf("bad --limit: %d %s", r.code, r.out)
	}
	if r := sluice("limit", "override", "set", "team", "batch", "team=c"); r.code != 1 {
		t.Errorf("override with nothing to set: %d %s, want exit code 1", r.code, r.out)
	}
}

func TestClientConsumeWaitAndAtMost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "sluice.yaml"), opsConfig)
	sluice := limitCLI(t, start(t, dir, nil))

	// Three callers at once on a bucket of one call per 500ms: each waits
	// its turn instead of being refused.
	var wg sync.WaitGroup
	runs := make([]limitRun, 3)
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i] = sluice("limit", "consume", "team", "send", "team=a", "--wait", "30s", "--json")
		}()
	}
	wg.Wait()
	for i, r := range runs {
		if r.code != 0 || r.body["allowed"] != true {
			t.Errorf("waiting caller %d: %d %s, want admitted", i, r.code, r.out)
		}
	}
	// A slot beyond the wait is refused at once.
	sluice("limit", "consume", "team", "hourly", "team=a")
	if r := sluice("limit", "consume", "team", "hourly", "team=a", "--wait", "1s", "--json"); r.code != 2 || r.body["retry_after_ms"].(float64) < 3_000_000 {
		t.Errorf("wait shorter than the next slot: %d %s, want exit code 2 with the hour's retry", r.code, r.out)
	}
	if r := sluice("limit", "consume", "team", "send", "team=a", "--wait", "2m"); r.code != 1 || !strings.Contains(r.out, "wait_ms must be between 0 and 60000") {
		t.Errorf("--wait 2m: %d %s, want the server's wait_ms rule", r.code, r.out)
	}

	if r := sluice("limit", "consume", "team", "batch", "team=a", "--cost", "3", "--at-most", "--json"); r.code != 0 || r.body["granted"] != float64(3) {
		t.Errorf("at most 3 of 5: %d %s", r.code, r.out)
	}
	if r := sluice("limit", "consume", "team", "batch", "team=a", "--cost", "3", "--at-most", "--json"); r.code != 0 || r.body["granted"] != float64(2) {
		t.Errorf("at most 3 with 2 left: %d %s, want 2 granted", r.code, r.out)
	}
	if r := sluice("limit", "consume", "team", "batch", "team=a", "--cost", "3", "--at-most", "--json"); r.code != 2 || r.body["granted"] != float64(0) {
		t.Errorf("at most 3 with none left: %d %s, want exit code 2 and 0 granted", r.code, r.out)
	}
}

// limitRemaining is the first limit's remaining count in a decision body.
func limitRemaining(body map[string]any) float64 {
	limits, _ := body["limits"].([]any)
	if len(limits) == 0 {
		return -1
	}
	return limits[0].(map[string]any)["remaining"].(float64)
}
