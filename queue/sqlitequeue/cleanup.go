package sqlitequeue

import (
	"context"

	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// cleanQueries returns the two deletes of one state's expired jobs, with
// the queue filter qf (see queueFilter) in place. Arguments: state, the
// cutoff (ns), the filter's queues, the limit.
//
// Jobs of no group go by their own finish time. Jobs of a group are kept
// until the group has ended (ended_at: done, and its completion job
// finished) and go by that time instead, found through the group: a crawl
// longer than the retention keeps its first pages for its completion job,
// and jobs held that way never stand in front of those that may go.
//
// The first query repeats jobs_finished's condition word for word:
// SQLite uses a partial index only for a query whose terms include the
// index's own.
func cleanQueries(qf string) []string {
	return []string{
		`DELETE FROM jobs WHERE id IN (SELECT id FROM jobs
			WHERE state IN ('completed', 'failed', 'cancelled') AND grp = ''
			AND state = ? AND finished_at <= ?` + qf + ` ORDER BY finished_at LIMIT ?)`,
		`DELETE FROM jobs WHERE id IN (SELECT j.id FROM job_groups g
			JOIN jobs j ON j.grp = g.id AND j.grp != '' AND j.state = ?
			WHERE g.ended_at > 0 AND g.ended_at <= ?` + qf + ` ORDER BY g.ended_at LIMIT ?)`,
	}
}

// Cleanup implements backend.Backend, in one write transaction: expired
// jobs (see cleanQueries), then groups past their retention whose jobs
// are gone.
func (b *Backend) Cleanup(ctx context.Context, req backend.CleanupRequest) (int, error) {
	limit := req.Limit
	if limit <= 0 {
		limit = backend.DefaultBatchLimit
	}
	now := b.now()
	deleted := 0
	err := b.write(ctx, "cleanup", func(tx *wtx) error {
		qf, qargs := queueFilter(req.Queues)
		var err error
		if deleted, err = sqlstore.CleanupJobs(tx, cleanQueries(qf), qargs, req, now); err != nil {
			return err
		}
		return cleanScheduling(tx, now, sqlstore.GroupRetention(req.Retention), limit)
	})
	return deleted, err
}
