package pgqueue

import (
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// leaseSched is a Lease that runs the scheduler (sqlstore's Lease), in
// one transaction: the time-driven work, then the best pending jobs their
// tenants and groups let start are made active by one statement, which
// also keeps their fair tags (keepStartTags).
func (s *Store) leaseSched(sc *sched, req backend.LeaseRequest, prefix string) ([]queue.Lease, error) {
	if err := sc.exec(orderedReads); err != nil {
		return nil, err
	}
	var out []queue.Lease
	err := sc.Lease(req.Queues, req.Max, func(picked []sqlstore.Cand) error {
		if len(picked) == 0 && len(sc.locks.skip) > 0 && !sc.locks.last {
			// Every job it could start needs a lock another step holds: run
			// again, waiting for them first (the last run leases nothing).
			return &scopeBusy{keys: sc.locks.skip}
		}
		if len(picked) == 0 {
			return nil
		}
		ids := make([]int64, len(picked))
		for i, c := range picked {
			ids[i] = c.ID
		}
		rows, err := sc.db.query(sc.ctx, qualify(`WITH l AS (UPDATE __schema__.jobs SET state = 'active', attempt = attempt + 1,
			lease_token = $1 || '.' || id, lease_until = $2, worker_id = $3, started_at = $4, updated_at = $4, wait_until = 0
			WHERE id = ANY($5) AND state = 'pending' RETURNING `+sqlstore.JobCols("")+`, lease_token, band, vrank, vstart, vfinish),
			`+keepStartTags("l")+`
			SELECT `+sqlstore.JobCols("l")+`, l.lease_token, l.band, l.vrank FROM l`, s.schema),
			prefix, sqlstore.NanosAfter(sc.now, req.LeaseFor), req.WorkerID, sc.now, ids)
		if err != nil {
			return err
		}
		out, err = scanLeases(rows)
		return err
	})
	return out, err
}
