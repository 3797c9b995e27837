package sqlitequeue

import (
	"database/sql"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// jobCols lists the columns scanJob reads, in order.
var jobCols = sqlstore.JobCols("")

type scanner = sqlstore.Row

func scanJob(s scanner) (*queue.Job, error) { return sqlstore.ScanJob(s) }

func fromNanos(n int64) time.Time { return sqlstore.FromNanos(n) }

func toNanos(t time.Time) int64 { return sqlstore.ToNanos(t) }

func after(now int64, d time.Duration) int64 { return sqlstore.NanosAfter(now, d) }

func parseID(id string) (int64, error) { return sqlstore.ParseID(id) }

func nullString(s string) sql.NullString { return sqlstore.NullString(s) }

func appendError(hist []queue.AttemptError, e queue.AttemptError) (string, error) {
	return sqlstore.AppendError(hist, e)
}
