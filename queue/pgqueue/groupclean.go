package pgqueue

import (
	"context"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// Jobs of a group are kept until the group has ended (done, and its
// completion job finished) and go by that time instead of their own, found
// through the group: a crawl longer than the retention keeps its first
// pages for its completion job. Arguments: state, cutoff, limit, queues.
const (
	qCleanGroupJobs = `DELETE FROM __schema__.jobs WHERE id IN (SELECT j.id FROM __schema__.job_groups g
		JOIN __schema__.jobs j ON j.grp = g.id AND j.grp <> '' AND j.state = $1
		WHERE g.ended_at > 0 AND g.ended_at <= $2 AND (cardinality($4::text[]) = 0 OR j.queue = ANY($4))
		ORDER BY g.ended_at LIMIT $3 FOR UPDATE OF j SKIP LOCKED)`
	// A group goes once its retention has passed since it ended and its
	// jobs are gone.
	qCleanGroups = `DELETE FROM __schema__.job_groups WHERE id IN (SELECT id FROM __schema__.job_groups g
		WHERE ended_at > 0 AND ended_at <= $1 AND NOT EXISTS (SELECT 1 FROM __schema__.jobs WHERE grp = g.id AND grp <> '')
		ORDER BY ended_at LIMIT $2 FOR UPDATE SKIP LOCKED)`
)

// cleanGroups deletes, within limit, the expired jobs of groups that have
// ended, then the groups past their retention that have no jobs left.
func (s *Store) cleanGroups(ctx context.Context, req backend.CleanupRequest, now int64, limit int) (int, error) {
	deleted := 0
	queues := req.Queues
	if queues == nil {
		queues = []string{}
	}
	for _, st := range []queue.State{queue.StateCompleted, queue.StateFailed, queue.StateCancelled} {
		keep, _ := req.Retention.For(st)
		if keep < 0 || deleted >= limit {
			continue
		}
		n, err := s.execN(ctx, qualify(qCleanGroupJobs, s.schema), string(st), now-int64(keep), limit-deleted, queues)
		if err != nil {
			return deleted, s.wrap("cleanup", err)
		}
		deleted += int(n)
	}
	if keep := sqlstore.GroupRetention(req.Retention); keep >= 0 {
		if _, err := s.execN(ctx, qualify(qCleanGroups, s.schema), now-int64(keep), max(limit, 1)); err != nil {
			return deleted, s.wrap("cleanup", err)
		}
	}
	return deleted, nil
}
