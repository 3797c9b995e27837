package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testutil"
)

const e2eScheduleConfig = `
schedules:
  - name: heartbeat
    every: 1s
    job: {queue: ops, kind: ping}
`

// sluice serve runs the scheduler: a config schedule ticking every second
// enqueues jobs; the CLI defines, lists, pauses, triggers and deletes
// schedules, and is refused changing the file's one.
func TestServeSchedules(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "sluice.yaml"), e2eScheduleConfig)
	p := start(t, dir, nil)
	sluice := cli(t, p.url)
	testutil.Eventually(t, "the heartbeat schedule to enqueue a job", func() bool {
		out, _ := sluice("schedule", "get", "heartbeat")
		return strings.Contains(out, "last run") && strings.Contains(out, "pending")
	})
	out, code := sluice("schedule", "set", "nightly", "--cron", "30 2 * * *", "--tz", "Europe/Berlin", "--queue", "reports", "--kind", "report", "--payload", `{"period":"day"}`)
	if code != 0 || !strings.Contains(out, "schedule nightly: 30 2 * * * (Europe/Berlin), job reports/report, from api") {
		t.Fatalf("schedule set: %d %s", code, out)
	}
	if out, code := sluice("schedule", "set", "heartbeat", "--every", "1m", "--kind", "x"); code == 0 || !strings.Contains(out, "config file") {
		t.Errorf("set over the config's schedule: %d %s; want refused naming the config file", code, out)
	}
	if out, code := sluice("schedule", "set", "bad", "--cron", "* *", "--kind", "x"); code == 0 || !strings.Contains(out, "cron must be 5 fields") {
		t.Errorf("set with a bad cron: %d %s", code, out)
	}
	if out, code := sluice("schedule", "pause", "nightly"); code != 0 || !strings.Contains(out, "paused") {
		t.Errorf("pause: %d %s", code, out)
	}
	if out, code := sluice("schedule", "trigger", "nightly"); code != 0 || !strings.HasPrefix(out, "enqueued job ") {
		t.Errorf("trigger: %d %s", code, out)
	}
	out, code = sluice("schedule", "list")
	if code != 0 || !strings.Contains(out, "heartbeat") || !strings.Contains(out, "nightly") || !strings.Contains(out, "paused") {
		t.Errorf("list: %d %s", code, out)
	}
	if out, code := sluice("schedule", "delete", "nightly"); code != 0 || !strings.Contains(out, "deleted") {
		t.Errorf("delete: %d %s", code, out)
	}
	if out, code := sluice("schedule", "get", "nightly"); code == 0 || !strings.Contains(out, "unknown schedule") {
		t.Errorf("get after delete: %d %s", code, out)
	}
}
