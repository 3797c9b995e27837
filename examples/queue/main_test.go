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
	want := `enqueued 5 invoices; enqueuing ACME-1 again: queue: duplicate job (job 1)
ACME-1   completed after 1 attempt(s) -> acme-1.pdf
ACME-2   completed after 1 attempt(s) -> acme-2.pdf
ACME-3   completed after 2 attempt(s) -> acme-3.pdf (errors: "pdf service timed out")
GLOBEX-1 completed after 1 attempt(s) -> globex-1.pdf
BROKEN   failed    after 1 attempt(s) (errors: "invoice has no lines")
queue billing: completed=4 failed=1
`
	if got := buf.String(); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}
