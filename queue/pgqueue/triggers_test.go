package pgqueue_test

import (
	"context"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/queue/pgqueue"
)

// Every UPDATE statement on the jobs table compiles the WHEN of each of
// its row triggers on UPDATE, and almost none fires them: the steps on a
// change of state share one trigger (migration 0025). A new one belongs
// in its function.
func TestJobsHaveOneRowTriggerOnUpdate(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	s, err := pgqueue.Open(context.Background(), url, pgqueue.Options{Schema: pgtest.Schema(t, url)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	// tgtype: 1 row, 16 update (pg_trigger.h).
	rows, err := s.Pool().Query(context.Background(), `SELECT tgname FROM pg_trigger
		WHERE tgrelid = ($1 || '.jobs')::regclass AND NOT tgisinternal AND tgtype & 17 = 17 ORDER BY tgname`,
		s.Schema())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"jobs_state_moved"}; !slices.Equal(got, want) {
		t.Errorf("row triggers on UPDATE of jobs = %v; want %v", got, want)
	}
}
