package pgqueue_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/pgqueue"
)

// TestMigrate: Migrate brings a schema to this build's version once, from
// any number of callers; Open with SkipMigrate accepts it then and
// refuses it before, and a schema newer than the build is refused.
func TestMigrate(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url)
	ctx := context.Background()
	opts := pgqueue.Options{Schema: schema, SkipMigrate: true, MaxConns: testConns}
	if _, err := pgqueue.Open(ctx, url, opts); !errors.Is(err, pgqueue.ErrSchemaVersion) {
		t.Fatalf("Open with SkipMigrate before Migrate = %v, want ErrSchemaVersion", err)
	}
	errs := make(chan error, 3)
	for range 3 {
		go func() { errs <- pgqueue.Migrate(ctx, url, pgqueue.Options{Schema: schema}) }()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatalf("Migrate: %v", err)
		}
	}
	s, err := pgqueue.Open(ctx, url, opts)
	if err != nil {
		t.Fatalf("Open with SkipMigrate after Migrate: %v", err)
	}
	defer s.Close()
	var n, v int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*), max(version) FROM `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()).Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	files, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	if v != pgqueue.SchemaVersion() || n != len(files) {
		t.Errorf("schema_migrations has %d rows up to version %d, want %d up to %d", n, v, len(files), pgqueue.SchemaVersion())
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()+` (version, name) VALUES ($1, 'future')`, v+1); err != nil {
		t.Fatal(err)
	}
	if _, err := pgqueue.Open(ctx, url, pgqueue.Options{Schema: schema}); err == nil || !strings.Contains(err.Error(), "newer than this build") {
		t.Errorf("Open of a newer schema = %v, want a refusal", err)
	}
}

// TestOpenBadOptions: bad input names the field and the rule.
func TestOpenBadOptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name, url string
		opts      pgqueue.Options
		want      string
	}{
		{"empty url", "", pgqueue.Options{}, "url"},
		{"bad url", "postgres://%zz", pgqueue.Options{}, "url"},
		{"long schema", "postgres://127.0.0.1/x", pgqueue.Options{Schema: strings.Repeat("s", 64)}, "Options.Schema"},
		{"control character", "postgres://127.0.0.1/x", pgqueue.Options{Schema: "a\nb"}, "Options.Schema"},
		{"negative pool", "postgres://127.0.0.1/x", pgqueue.Options{MaxConns: -1}, "Options.MaxConns"},
	}
	for _, c := range cases {
		_, err := pgqueue.Open(ctx, c.url, c.opts)
		if !errors.Is(err, queue.ErrInvalidArgument) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Open = %v, want an invalid argument naming %s", c.name, err, c.want)
		}
	}
}

// TestListenerReconnects: when the listening connection is cut, the
// listener connects again and wakes its subscribers, and notifications
// reach them again.
func TestListenerReconnects(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url)
	ctx := context.Background()
	s := open(t, nil)
	app := "listen-" + schema
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	other, err := pgqueue.Open(ctx, url+sep+"application_name="+app, pgqueue.Options{Schema: s.Schema(), MaxConns: testConns})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	wake, stop := other.Subscribe([]string{"q"})
	defer stop()
	syncNotify(t, s, other, "mark-1")
	syncNotify(t, s, other, "mark-2")
	drainNow(wake)

	// Cut every connection of other: the listener's among them.
	if _, err := s.Pool().Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, app); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake: // the listener is back and says it may have missed something
	case <-time.After(30 * time.Second):
		t.Fatal("no wake-up after the listener's connection was cut")
	}
	syncNotify(t, s, other, "mark-3")
	if _, err := s.Enqueue(ctx, []queue.JobSpec{{Queue: "q", Kind: "k"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(30 * time.Second):
		t.Fatal("no wake-up for a job enqueued after the reconnect")
	}
}
