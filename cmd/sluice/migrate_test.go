package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/queue/pgqueue"
)

// sluice migrate brings a schema to this build's version, so that a store
// opened with SkipMigrate accepts it; run again, it changes nothing.
func TestMigrate(t *testing.T) {
	u := pgtest.URL(t)
	schema := pgtest.Schema(t, u)
	opts := pgqueue.Options{Schema: schema, SkipMigrate: true}
	if s, err := pgqueue.Open(context.Background(), u, opts); err == nil {
		s.Close()
		t.Fatal("a store with SkipMigrate opened an empty schema")
	}
	for range 2 {
		var out, errb bytes.Buffer
		if code := run([]string{"migrate", "--postgres-url", u, "--schema", schema}, &out, &errb); code != 0 {
			t.Fatalf("sluice migrate = %d: %s", code, errb.String())
		}
		if want := "is at version"; !strings.Contains(out.String(), want) {
			t.Errorf("output %q, want it to say %q", out.String(), want)
		}
	}
	s, err := pgqueue.Open(context.Background(), u, opts)
	if err != nil {
		t.Fatalf("Open with SkipMigrate after sluice migrate: %v", err)
	}
	s.Close()
}

func TestMigrateNeedsADatabase(t *testing.T) {
	t.Chdir(t.TempDir()) // no ./sluice.yaml
	var out, errb bytes.Buffer
	if code := run([]string{"migrate"}, &out, &errb); code == 0 || !strings.Contains(errb.String(), "--postgres-url or storage.postgres_url") {
		t.Errorf("sluice migrate without a database = %d, %q; want an error naming --postgres-url", code, errb.String())
	}
}
