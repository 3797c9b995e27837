package pgqueue_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// TestFairSQLMatchesGo checks that the fair-order rule the set-based
// statements compute in SQL (sqlstore.FairTagsSQL) gives, on a table of
// cases, the tags and sort keys the Go rule gives a weight-1 job
// (backend.FairTag, backend.FairOrder).
func TestFairSQLMatchesGo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	starts := []int64{0, 1, backend.FairUnit, 123_456_789, 1 << 40}
	agings := []int{0, 1, 3, 1000, queue.MaxAgingStep}
	prios := []int{0, 1, 7, queue.MaxPriority}
	query := `SELECT ` + sqlstore.FairTagsSQL("$1::bigint", "$2::int", "$3::int")
	for _, s := range starts {
		for _, a := range agings {
			for _, p := range prios {
				var vstart, vfinish, band, rank int64
				if err := conn.QueryRow(ctx, query, s, a, p).Scan(&vstart, &vfinish, &band, &rank); err != nil {
					t.Fatal(err)
				}
				wantStart, wantFinish := backend.FairTag(s, s, 1)
				wantBand, wantRank := backend.FairOrder(wantStart, p, a)
				if vstart != wantStart || vfinish != wantFinish || band != wantBand || rank != wantRank {
					t.Errorf("start %d, aging %d, priority %d: SQL gives (%d, %d, %d, %d), Go (%d, %d, %d, %d)",
						s, a, p, vstart, vfinish, band, rank, wantStart, wantFinish, wantBand, wantRank)
				}
			}
		}
	}
	// Not ready yet: no tag, rank 0.
	var vstart, vfinish *int64
	var band, rank int64
	if err := conn.QueryRow(ctx, query, nil, 3, 2).Scan(&vstart, &vfinish, &band, &rank); err != nil {
		t.Fatal(err)
	}
	if vstart != nil || vfinish != nil || band != 0 || rank != 0 {
		t.Errorf("untagged job: SQL gives (%v, %v, %d, %d), want (NULL, NULL, 0, 0)", vstart, vfinish, band, rank)
	}
}
