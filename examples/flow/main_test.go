package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRun(t *testing.T) {
	var buf bytes.Buffer
	if err := run(context.Background(), &buf, filepath.Join(t.TempDir(), "q.db")); err != nil {
		t.Fatal(err)
	}
	want := `enqueued flow "example.com": 5 jobs, pending=1 blocked=4
summary (completed): 3 pages (/ /blog /pricing), 1400 words
flow ended: completed=5
`
	if got := buf.String(); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}
