package pgqueue

import (
	"database/sql"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// jobColNames lists the columns scanJob reads, in order.
var jobColNames = sqlstore.JobColumns

// jobCols is jobColNames for a select list, each prefixed with alias and
// a dot when alias is not empty.
func jobCols(alias string) string { return sqlstore.JobCols(alias) }

// colList lists names, each qualified by alias unless it is empty.
func colList(alias string, names []string) string { return sqlstore.ColList(alias, names) }

// scanner is a row of pgx or of database/sql.
type scanner = sqlstore.Row

// scanJob reads the columns of jobCols, then extra, from s.
func scanJob(s scanner, extra ...any) (*queue.Job, error) { return sqlstore.ScanJob(s, extra...) }

// newJobScan is the reusable destinations of a lease's rows.
func newJobScan(extra ...any) *sqlstore.JobScan { return sqlstore.NewJobScan(extra...) }

func fromNanos(n int64) time.Time { return sqlstore.FromNanos(n) }

func toNanos(t time.Time) int64 { return sqlstore.ToNanos(t) }

func after(now int64, d time.Duration) int64 { return sqlstore.NanosAfter(now, d) }

func parseID(id string) (int64, error) { return sqlstore.ParseID(id) }

func nullString(s string) sql.NullString { return sqlstore.NullString(s) }

func appendError(hist []queue.AttemptError, e queue.AttemptError) (string, error) {
	return sqlstore.AppendError(hist, e)
}
