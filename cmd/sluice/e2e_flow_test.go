package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The flow commands against a running server: enqueue a flow from a file,
// show it, follow a job's parents and children, cancel it.
func TestFlowCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "sluice.yaml"), e2eConfig)
	p := start(t, dir, nil)
	sluice := cli(t, p.url)
	file := filepath.Join(dir, "flow.json")
	writeFile(t, file, `{"name":"site","nodes":[
		{"name":"crawl","job":{"queue":"flowcli","kind":"crawl"}},
		{"name":"extract","job":{"queue":"flowcli","kind":"extract"}},
		{"name":"summarise","job":{"queue":"flowcli","kind":"summarise"}}],
		"edges":[{"parent":"crawl","child":"extract"},{"parent":"extract","child":"summarise"}]}`)
	out, code := sluice("flow", "enqueue", file)
	if code != 0 || !strings.Contains(out, "blocked 2") || !strings.Contains(out, "summarise") {
		t.Fatalf("flow enqueue: %d %s", code, out)
	}
	id := strings.Fields(out)[1]
	out, code = sluice("flow", "get", id, "--json")
	if code != 0 || !strings.Contains(out, `"extract"`) {
		t.Fatalf("flow get: %d %s", code, out)
	}
	extract := jobIDOf(t, out, "extract")
	if out, code := sluice("job", "get", extract); code != 0 || !strings.Contains(out, "parent ") || !strings.Contains(out, "child ") || !strings.Contains(out, "blocked") {
		t.Fatalf("job get: %d %s", code, out)
	}
	if out, code := sluice("job", "enqueue", "--queue", "flowcli", "--kind", "after", "--depends-on", extract); code != 0 || !strings.Contains(out, "(blocked)") {
		t.Fatalf("enqueue --depends-on: %d %s", code, out)
	}
	if out, code := sluice("flow", "cancel", id); code != 0 || !strings.Contains(out, "cancelled 3") {
		t.Fatalf("flow cancel: %d %s", code, out)
	}
	crawl := jobIDOf(t, out, "crawl")
	want := "parent job " + crawl + " is cancelled; retry job " + crawl + " instead"
	if out, code := sluice("job", "retry", extract); code != 1 || !strings.Contains(out, want) || !strings.Contains(out, "HTTP 409") {
		t.Fatalf("job retry of a child whose parent was cancelled: %d %s; want %q", code, out, want)
	}
	if out, code := sluice("flow", "get", "nope"); code == 0 || !strings.Contains(out, "unknown flow") {
		t.Fatalf("flow get unknown: %d %s", code, out)
	}
}

// jobIDOf finds the id of node name in a flow's JSON.
func jobIDOf(t *testing.T, raw, name string) string {
	t.Helper()
	i := strings.Index(raw, `"flow_node": "`+name+`"`)
	if i < 0 {
		t.Fatalf("no node %s in %s", name, raw)
	}
	j := strings.LastIndex(raw[:i], `"id": "`)
	rest := raw[j+len(`"id": "`):]
	return rest[:strings.Index(rest, `"`)]
}
